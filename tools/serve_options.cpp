#include "serve_options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "api/batch_lines.h"
#include "api/http/cors.h"
#include "api/webhooks/webhook_flags.h"
#include "default_model.h"

namespace hichat::tools {
namespace {

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "model", .value_name = "DIR", .help = "model folder (config.json, *.safetensors, tokenizer)",
     .default_note = "models/default beside the executable"},
    {.name = "host", .value_name = "ADDR", .default_value = "127.0.0.1", .help = "address to listen on"},
    {.name = "port", .kind = FlagKind::kInt, .value_name = "N", .default_value = "8000",
     .help = "TCP port; 0: any free port", .min = 0, .max = 65535},
    {.name = "served-model-name", .value_name = "NAME", .help = "the model id of /v1/models and requests",
     .default_note = "the model folder's name"},
    {.name = "api-key", .kind = FlagKind::kRepeated, .value_name = "KEY",
     .help = "accept this API key (Authorization: Bearer KEY); with none, the server is open to anyone"},
    {.name = "api-key-file", .kind = FlagKind::kRepeated, .value_name = "FILE",
     .help = "accept the API keys in FILE, one per line"},
    {.name = "rate-limit-rpm", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "requests per minute per API key (needs API keys); 0: unlimited", .min = 0, .max = 1 << 30},
    {.name = "rate-limit-tpm", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "tokens per minute per API key (needs API keys); 0: unlimited", .min = 0, .max = int64_t{1} << 40},
    {.name = "max-concurrent-per-key", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "requests in flight per API key (needs API keys); 0: unlimited", .min = 0, .max = 1 << 20},
    {.name = "deny-list", .value_name = "FILE",
     .help = "refuse prompts and end outputs that contain a phrase of FILE (one per line)", .default_note = "off"},
    {.name = "access-log", .value_name = "FILE|-", .help = "one JSON line per request, appended to FILE; -: stderr",
     .default_note = "off"},
    {.name = "step-log", .value_name = "FILE",
     .help = "one JSON line per engine step, appended to FILE: its time, the cost model's prediction, what it held",
     .default_note = "off"},
    {.name = "allowed-origin", .kind = FlagKind::kRepeated, .value_name = "ORIGIN|*",
     .help = "let browser pages of ORIGIN (scheme://host[:port]), or of any origin (*), call the API (CORS)",
     .default_note = "no cross-origin access"},
    {.name = "tls-cert", .value_name = "PEM", .help = "serve HTTPS with this certificate chain (with --tls-key)",
     .default_note = "plain HTTP"},
    {.name = "tls-key", .value_name = "PEM", .help = "the private key of --tls-cert"},
    {.name = "io-threads", .kind = FlagKind::kInt, .value_name = "N",
     .help = "HTTP I/O threads, at most 4 per online core", .min = 1, .max = 256, .max_per_online_core = 4,
     .default_note = "1 on up to 4 cores, else 2"},
    {.name = "threads", .kind = FlagKind::kInt, .value_name = "N",
     .help = "CPU compute threads, at most 4 per online core; 0: all cores", .min = 0, .max = 1024,
     .max_per_online_core = 4, .default_note = "the cores the I/O threads leave"},
    {.name = "max-num-seqs", .kind = FlagKind::kInt, .value_name = "N", .help = "sequences running at once",
     .min = 1, .max = 4096, .default_note = "64 on the CPU, 256 on a GPU"},
    {.name = "max-num-batched-tokens", .kind = FlagKind::kInt, .value_name = "N",
     .help = "tokens per engine step, at least --max-num-seqs", .min = 1, .max = 1 << 20,
     .default_note = "512 on the CPU, 8192 on a GPU"},
    {.name = "prefill-chunk", .kind = FlagKind::kInt, .value_name = "N",
     .help = "prompt tokens of one sequence per step, at most --max-num-batched-tokens", .min = 1, .max = 1 << 20,
     .default_note = "256 on the CPU, 2048 on a GPU"},
    {.name = "target-itl-ms", .kind = FlagKind::kNumber, .value_name = "MS", .default_value = "0",
     .help = "inter-token latency target: a step that decodes takes only the prompt tokens and new requests "
             "that a cost model fitted to the measured steps predicts fit in it; 0: off (the fixed token budget)",
     .min = 0, .max = 1e6},
    {.name = "target-ttft-ms", .kind = FlagKind::kNumber, .value_name = "MS", .default_value = "0",
     .help = "time-to-first-token target: a prompt that would miss it at the pace --target-itl-ms leaves gets "
             "whole chunks; 0: none", .min = 0, .max = 1e7},
    {.name = "priority-targets", .value_name = "P:ITL:TTFT[,...]",
     .help = "targets per priority class, in ms (0: none): requests of priority <= P take the first such class",
     .default_note = "every request takes --target-itl-ms and --target-ttft-ms"},
    {.name = "key-weight", .kind = FlagKind::kRepeated, .value_name = "KEY_ID=W",
     .help = "the fair share of an API key (its id as in the access log: key- and the first 8 hex digits of its "
             "SHA-256); under contention keys get tokens in proportion to their weights (default 1)"},
    {.name = "max-queue-wait-s", .kind = FlagKind::kNumber, .value_name = "S", .default_value = "0",
     .help = "refuse new requests (503 with Retry-After) while the requests already waiting are predicted to "
             "take longer than S seconds to start; 0: no limit", .min = 0, .max = 86400},
    {.name = "max-queue", .kind = FlagKind::kInt, .value_name = "N", .default_value = "1024",
     .help = "requests waiting to start; more get 429", .min = 1, .max = 1 << 20},
    {.name = "kv-cache-mb", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "CPU KV cache size in MiB; 0: enough for --max-num-seqs full contexts, at most 1/4 of RAM", .min = 0,
     .max = int64_t{1} << 24},
    {.name = "max-model-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "context length in tokens, at most the model's; 0: the model's (capped by the KV cache)", .min = 0,
     .max = 1 << 24},
    {.name = "request-timeout-s", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "a request still running after N s ends; 0: no limit", .min = 0, .max = 86400},
    {.name = "shutdown-drain-s", .kind = FlagKind::kInt, .value_name = "N", .default_value = "30",
     .help = "on SIGTERM/SIGINT, requests in flight get N s to finish", .min = 0, .max = 3600},
    {.name = "max-body-mb", .kind = FlagKind::kInt, .value_name = "N", .default_value = "8",
     .help = "largest request body in MiB; larger: 413", .min = 1, .max = 1024},
    {.name = "header-timeout-s", .kind = FlagKind::kInt, .value_name = "N", .default_value = "10",
     .help = "time to receive the request headers; over: 408", .min = 1, .max = 3600},
    {.name = "body-timeout-s", .kind = FlagKind::kInt, .value_name = "N", .default_value = "30",
     .help = "time to receive the request body; over: 408", .min = 1, .max = 3600},
    {.name = "session-db", .value_name = "PATH|:memory:",
     .help = "SQLite file of stored responses and conversations (/v1/responses, /v1/conversations); :memory: keeps "
             "them until exit",
     .default_note = "$XDG_DATA_HOME/hichat/sessions.db, else ~/.local/share/hichat/sessions.db"},
    {.name = "session-ttl", .kind = FlagKind::kInt, .value_name = "SECONDS", .default_value = "2592000",
     .help = "stored responses and conversations older than this are deleted; 0: kept forever", .min = 0,
     .max = int64_t{1} << 40},
    {.name = "session-max-rows", .kind = FlagKind::kInt, .value_name = "N", .default_value = "100000",
     .help = "at most N stored responses and N conversations; the oldest go first", .min = 1, .max = int64_t{1} << 40},
    {.name = "files-dir", .value_name = "DIR",
     .help = "folder of the files uploaded to /v1/files and of the batches' output files (their metadata is in "
             "--session-db)",
     .default_note = "beside the session database: <name>-files/ (with --session-db :memory:, a temporary folder "
                     "removed at exit)"},
    {.name = "max-file-mb", .kind = FlagKind::kInt, .value_name = "N", .default_value = "100",
     .help = "largest file /v1/files takes, in MiB; larger: 413", .min = 1, .max = 4096},
    {.name = "batch-concurrency", .kind = FlagKind::kInt, .value_name = "N", .default_value = "4",
     .help = "batch lines (/v1/batches) in the engine at once; they run at the least urgent priority", .min = 1,
     .max = 4096},
    {.name = "webhook-url", .kind = FlagKind::kRepeated, .value_name = "URL",
     .help = "POST a signed Standard Webhooks event to URL when a batch finishes (batch.completed, batch.failed, "
             "batch.cancelled, batch.expired) or a background response ends (response.completed, response.failed, "
             "response.cancelled, response.incomplete); its host must be in --webhook-allow", .default_note = "no webhooks"},
    {.name = "webhook-allow", .kind = FlagKind::kRepeated, .value_name = "HOST[,HOST]",
     .help = "the only hosts webhooks may go to: exact names, *.example.com, IP literals"},
    {.name = "webhook-secret-file", .value_name = "FILE",
     .help = "the webhook signing secret (whsec_<base64 of 24-64 bytes>), first line of FILE",
     .default_note = "the HICHAT_WEBHOOK_SECRET environment variable"},
    {.name = "webhook-max-attempts", .kind = FlagKind::kInt, .value_name = "N",
     .help = "attempts per webhook delivery (the first included) before it is given up", .min = 1, .max = 100,
     .default_note = "12"},
    {.name = "webhook-retry-base-ms", .kind = FlagKind::kInt, .value_name = "MS",
     .help = "delay before a webhook's first retry, doubled after each (at most 1 h)", .min = 1, .max = 3'600'000,
     .default_note = "5000"},
    {.name = "webhook-state-db", .value_name = "PATH",
     .help = "SQLite file of webhook deliveries not yet accepted, resumed at the next start",
     .default_note = "beside the session database: <name>-webhooks.db (with --session-db :memory:, kept in memory)"},
    {.name = "device", .value_name = "auto|cpu|cuda", .default_value = "auto",
     .help = "where the model runs; auto: CUDA when a device is present"},
    {.name = "quantization", .value_name = "none|fp8|int8|q4", .default_value = "none",
     .help = "quantize a bf16 checkpoint's linear weights on load: fp8 / int8 per-channel scales, q4 4-bit "
             "per group of 32 (int8, q4: CPU only)"},
    {.name = "kv-cache-dtype", .value_name = "auto|bf16|f16|fp32|fp8", .default_value = "auto",
     .help = "KV cache element type. CUDA: bf16 (auto) or fp8 (E4M3 with the checkpoint's k/v scales, 1.0 "
             "where it has none: twice the tokens); CPU: fp32 (auto), bf16 or f16 (half the memory: twice the tokens)"},
    {.name = "gpu-memory-fraction", .kind = FlagKind::kNumber, .value_name = "F", .default_value = "0.9",
     .help = "CUDA KV cache: this share of the GPU memory free after the weights", .min = 0.05, .max = 0.99},
    kGpuLayersFlag,
    kOffloadFlag,
    kGpuMemoryGbFlag,
    {.name = "no-prefix-cache", .kind = FlagKind::kBool,
     .help = "compute every prompt from scratch: no KV shared across requests (the cache is on by default)"},
    {.name = "host-kv-cache-gb", .kind = FlagKind::kNumber, .value_name = "GB",
     .help = "CUDA: pinned host memory that keeps KV blocks evicted from the GPU, copied back on a prefix hit; "
             "0: off; default: 1/5 of the available RAM, at most 64", .min = 0, .max = 1 << 20},
};
// clang-format on

// The integer flags, read in one loop; `computed` is the default of a flag whose default depends on
// the machine or the device.
struct IntTarget {
    const char* name;
    std::optional<int64_t> computed;
    int64_t* out;
};

struct IntValues {
    int64_t port = 0, io_threads = 0, threads = 0, rpm = 0, tpm = 0, per_key = 0, seqs = 0, tokens = 0,
            chunk = 0, queue = 0, kv_mb = 0, max_len = 0, timeout_s = 0, drain_s = 0, body_mb = 0,
            header_s = 0, body_s = 0, session_ttl_s = 0, session_rows = 0, file_mb = 0, batch_lines = 0;
};

Result<IntValues> read_ints(const CliArgs& flags, bool gpu) {
    const ThreadSplit split = default_thread_split(online_cores());
    IntValues v;
    const IntTarget targets[] = {
        {"port", {}, &v.port},
        {"io-threads", split.num_io_threads, &v.io_threads},
        {"threads", -1, &v.threads},  // -1: not given, computed below from the I/O threads
        {"rate-limit-rpm", {}, &v.rpm},
        {"rate-limit-tpm", {}, &v.tpm},
        {"max-concurrent-per-key", {}, &v.per_key},
        {"max-num-seqs", gpu ? 256 : 64, &v.seqs},
        {"max-num-batched-tokens", gpu ? 8192 : 512, &v.tokens},
        {"prefill-chunk", gpu ? 2048 : 256, &v.chunk},
        {"max-queue", {}, &v.queue},
        {"kv-cache-mb", {}, &v.kv_mb},
        {"max-model-len", {}, &v.max_len},
        {"request-timeout-s", {}, &v.timeout_s},
        {"shutdown-drain-s", {}, &v.drain_s},
        {"max-body-mb", {}, &v.body_mb},
        {"header-timeout-s", {}, &v.header_s},
        {"body-timeout-s", {}, &v.body_s},
        {"session-ttl", {}, &v.session_ttl_s},
        {"session-max-rows", {}, &v.session_rows},
        {"max-file-mb", {}, &v.file_mb},
        {"batch-concurrency", {}, &v.batch_lines},
    };
    for (const IntTarget& t : targets) {
        auto value = t.computed ? flags.get_int(t.name, *t.computed) : flags.get_int(t.name);
        HICHAT_RETURN_IF_ERROR(value.status());
        *t.out = *value;
    }
    // Without --threads: the cores the I/O threads leave (at least one).
    if (v.threads < 0) v.threads = std::max<int64_t>(1, online_cores() - v.io_threads);
    return v;
}

Status needs(const CliArgs& flags, const char* flag, bool condition, const std::string& why) {
    if (!flags.has(flag) || condition) return ok_status();
    return invalid_argument("--" + std::string(flag) + " " + why);
}

// Per-key limits without keys, half of a TLS pair, a limit the engine would silently raise.
Status check_combinations(const CliArgs& flags, const IntValues& v) {
    const bool keys = flags.has("api-key") || flags.has("api-key-file");
    for (const char* f : {"rate-limit-rpm", "rate-limit-tpm", "max-concurrent-per-key", "key-weight"}) {
        HICHAT_RETURN_IF_ERROR(
            needs(flags, f, keys, "needs --api-key or --api-key-file: limits are kept per API key"));
    }
    HICHAT_RETURN_IF_ERROR(needs(flags, "tls-cert", flags.has("tls-key"), "needs --tls-key"));
    HICHAT_RETURN_IF_ERROR(needs(flags, "tls-key", flags.has("tls-cert"), "needs --tls-cert"));
    HICHAT_RETURN_IF_ERROR(needs(flags, "max-num-batched-tokens", v.tokens >= v.seqs,
                                 "(" + std::to_string(v.tokens) + ") must be at least --max-num-seqs (" +
                                     std::to_string(v.seqs) + "): every running sequence decodes each step"));
    const int64_t step_tokens = std::max(v.tokens, v.seqs);
    return needs(flags, "prefill-chunk", v.chunk <= step_tokens,
                 "(" + std::to_string(v.chunk) + ") must be at most --max-num-batched-tokens (" +
                     std::to_string(step_tokens) + "): a step holds no more tokens");
}

// Flags of one device's runner are refused when that runner certainly does not run: --device names
// the other one, or --device auto on a machine without CUDA (then the CPU runs). Under auto with a
// GPU present the runner is chosen per checkpoint, and the log line naming it says which apply.
Status check_device_flags(const CliArgs& flags, executor::DeviceKind device) {
    using executor::DeviceKind;
    const bool cuda_present = executor::cuda_available();
    const bool cpu_certain = device == DeviceKind::kCpu || (device == DeviceKind::kAuto && !cuda_present);
    const std::string on_cpu = device == DeviceKind::kCpu
                                   ? "with --device cpu"
                                   : "here: --device auto runs on the CPU (no CUDA device)";
    HICHAT_RETURN_IF_ERROR(needs(flags, "gpu-memory-fraction", !cpu_certain,
                                 "sizes the CUDA KV cache and has no effect " + on_cpu));
    for (const char* f : {"gpu-layers", "offload", "gpu-memory-gb"}) {
        HICHAT_RETURN_IF_ERROR(needs(flags, f, !cpu_certain,
                                     "places layers between the GPU and the host and has no effect " + on_cpu));
    }
    HICHAT_RETURN_IF_ERROR(needs(flags, "host-kv-cache-gb", !cpu_certain,
                                 "backs the CUDA KV cache (the CPU's is in RAM already: see --kv-cache-mb) and "
                                 "has no effect " + on_cpu));
    HICHAT_RETURN_IF_ERROR(needs(flags, "host-kv-cache-gb", !flags.has("no-prefix-cache"),
                                 "keeps prefix-cache blocks and has no effect with --no-prefix-cache"));
    HICHAT_RETURN_IF_ERROR(needs(flags, "kv-cache-mb", device != DeviceKind::kCuda,
                                 "applies to the CPU runner and has no effect with --device cuda"));
    const bool cpu_layers_possible = flags.get("offload") != "stream" &&
                                     (flags.has("gpu-layers") || flags.has("gpu-memory-gb") || flags.has("offload"));
    HICHAT_RETURN_IF_ERROR(needs(flags, "threads", device != DeviceKind::kCuda || cpu_layers_possible,
                                 "applies to the CPU runner (or to layers on the CPU: --offload cpu|auto with "
                                 "--gpu-layers or --gpu-memory-gb) and has no effect with --device cuda"));
    if (device == DeviceKind::kCuda && !cuda_present) {
        return invalid_argument(
            "--device cuda: no CUDA device (this build has no CUDA backend, or no device is "
            "visible); use --device cpu or auto");
    }
    return ok_status();
}

std::string served_name(const std::string& model_dir) {
    const std::filesystem::path dir = std::filesystem::path(model_dir).lexically_normal();
    std::string name = dir.filename().string();
    return name.empty() ? dir.parent_path().filename().string() : name;
}

void apply_ints(const IntValues& v, ServeOptions& o) {
    o.http.port = static_cast<int>(v.port);
    o.http.num_io_threads = static_cast<int>(v.io_threads);
    o.http.shutdown_drain_ms = static_cast<int>(v.drain_s * 1000);
    o.http.max_body_bytes = static_cast<size_t>(v.body_mb) << 20;
    o.http.header_timeout_ms = static_cast<int>(v.header_s * 1000);
    o.http.body_timeout_ms = static_cast<int>(v.body_s * 1000);
    o.num_threads = static_cast<int>(v.threads);
    o.quota = {.requests_per_minute = static_cast<int>(v.rpm),
               .tokens_per_minute = v.tpm,
               .max_concurrent = static_cast<int>(v.per_key)};
    o.engine.scheduler.max_num_seqs = static_cast<int>(v.seqs);
    o.engine.scheduler.max_num_tokens_per_step = static_cast<int>(std::max(v.tokens, v.seqs));
    o.engine.scheduler.prefill_chunk_tokens = static_cast<int>(v.chunk);
    o.engine.scheduler.background_priority = api::kBatchLinePriority;   // batch lines run on spare capacity
    o.engine.max_waiting = static_cast<int>(v.queue);
    o.kv_cache_bytes = v.kv_mb << 20;
    o.max_model_len = static_cast<int>(v.max_len);
    o.request_timeout_s = static_cast<int>(v.timeout_s);
    o.sessions.ttl_s = v.session_ttl_s;
    o.sessions.max_rows = v.session_rows;
    o.max_file_bytes = v.file_mb << 20;
    o.batch_lines_in_flight = static_cast<int>(v.batch_lines);
    // An upload carries the file and a few multipart headers: the route takes the file limit plus 1 MiB,
    // so that a file just over it gets the API's own 413 naming --max-file-mb.
    o.http.route_body_limits.push_back(
        {.method = "POST", .path = "/v1/files", .max_body_bytes = static_cast<size_t>(o.max_file_bytes + (int64_t{1} << 20))});
}

// "P:ITL:TTFT[,...]" -> classes in ascending P; each error names the flag and the entry.
Result<std::vector<scheduler::PriorityTargets>> parse_priority_targets(const std::string& text) {
    std::vector<scheduler::PriorityTargets> out;
    std::stringstream entries(text);
    std::string entry;
    while (std::getline(entries, entry, ',')) {
        const auto bad = [&](const std::string& why) {
            return invalid_argument("--priority-targets: '" + entry + "' " + why);
        };
        std::stringstream fields(entry);
        std::string p, itl, ttft, extra;
        if (!std::getline(fields, p, ':') || !std::getline(fields, itl, ':') || !std::getline(fields, ttft, ':') ||
            std::getline(fields, extra, ':')) {
            return bad("is not PRIORITY:ITL_MS:TTFT_MS");
        }
        scheduler::PriorityTargets t;
        size_t used = 0;
        try {
            t.max_priority = std::stoi(p, &used);
            if (used != p.size()) return bad("has a priority that is not an integer");
            t.itl_ms = std::stod(itl, &used);
            if (used != itl.size()) return bad("has an ITL that is not a number");
            t.ttft_ms = std::stod(ttft, &used);
            if (used != ttft.size()) return bad("has a TTFT that is not a number");
        } catch (const std::exception&) {
            return bad("is not PRIORITY:ITL_MS:TTFT_MS with numbers");
        }
        if (!(t.itl_ms >= 0) || !(t.ttft_ms >= 0)) return bad("has a negative target");
        out.push_back(t);
    }
    if (out.empty()) return invalid_argument("--priority-targets: no class given");
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.max_priority < b.max_priority; });
    for (size_t i = 1; i < out.size(); ++i) {
        if (out[i].max_priority == out[i - 1].max_priority) {
            return invalid_argument("--priority-targets: priority " + std::to_string(out[i].max_priority) +
                                    " is given twice");
        }
    }
    return out;
}

Status read_scheduling(const CliArgs& flags, scheduler::SchedulerConfig& s, double& max_queue_wait_ms,
                       std::vector<std::pair<std::string, double>>& key_weights) {
    auto itl = flags.get_double("target-itl-ms");
    HICHAT_RETURN_IF_ERROR(itl.status());
    auto ttft = flags.get_double("target-ttft-ms");
    HICHAT_RETURN_IF_ERROR(ttft.status());
    s.target_itl_ms = *itl;
    s.target_ttft_ms = *ttft;
    for (const std::string& entry : flags.get_all("key-weight")) {
        const size_t eq = entry.find('=');
        const std::string id = entry.substr(0, eq);
        bool hex = id.size() == 12 && id.rfind("key-", 0) == 0;
        for (size_t i = 4; hex && i < id.size(); ++i) hex = std::isxdigit(static_cast<unsigned char>(id[i])) != 0;
        double weight = 0;
        size_t used = 0;
        try {
            if (eq != std::string::npos) weight = std::stod(entry.substr(eq + 1), &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (!hex || eq == std::string::npos || used == 0 || used != entry.size() - eq - 1 || !(weight > 0) || weight > 1e6) {
            return invalid_argument("--key-weight: '" + entry + "' is not KEY_ID=WEIGHT (key- and 8 hex digits, a weight > 0)");
        }
        key_weights.emplace_back(id, weight);
        s.owner_weights.push_back({.owner = scheduler::owner_id(id), .weight = weight});
    }
    auto wait_s = flags.get_double("max-queue-wait-s");
    HICHAT_RETURN_IF_ERROR(wait_s.status());
    max_queue_wait_ms = *wait_s * 1000.0;
    if (flags.has("priority-targets")) {
        auto classes = parse_priority_targets(flags.get("priority-targets"));
        HICHAT_RETURN_IF_ERROR(classes.status());
        s.priority_targets = std::move(classes).value();
    }
    return ok_status();
}

// The webhook flags (all or none with --webhook-url); the state db defaults to <session db>-webhooks.db
// beside the session database, or to memory with a :memory: one.
Status read_webhook_flags(const CliArgs& flags, ServeOptions& o) {
    api::webhooks::WebhookFlagValues v;
    v.urls = flags.get_all("webhook-url");
    v.allow = flags.get_all("webhook-allow");
    v.secret_file = flags.get("webhook-secret-file");
    const char* secret_env = std::getenv("HICHAT_WEBHOOK_SECRET");
    if (secret_env != nullptr) v.secret_env = secret_env;
    v.state_db = flags.get("webhook-state-db");
    if (flags.has("webhook-max-attempts")) {
        auto n = flags.get_int("webhook-max-attempts");
        HICHAT_RETURN_IF_ERROR(n.status());
        v.max_attempts = static_cast<int>(*n);
    }
    if (flags.has("webhook-retry-base-ms")) {
        auto ms = flags.get_int("webhook-retry-base-ms");
        HICHAT_RETURN_IF_ERROR(ms.status());
        v.retry_base_ms = *ms;
    }
    auto config = api::webhooks::parse_webhook_flags(v);
    HICHAT_RETURN_IF_ERROR(config.status());
    o.webhooks = std::move(config).value();
    if (!o.webhooks.target_urls.empty() && v.state_db.empty() && o.sessions.path != ":memory:") {
        const std::filesystem::path db(o.sessions.path);
        o.webhooks.state_db_path = (db.parent_path() / (db.stem().string() + "-webhooks.db")).string();
    }
    return ok_status();
}

// $XDG_DATA_HOME/hichat/sessions.db, else $HOME/.local/share/hichat/sessions.db; "" when neither is set.
std::string default_session_db() {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    if (xdg != nullptr && *xdg != '\0') return (std::filesystem::path(xdg) / "hichat" / "sessions.db").string();
    const char* home = std::getenv("HOME");
    if (home != nullptr && *home != '\0') {
        return (std::filesystem::path(home) / ".local" / "share" / "hichat" / "sessions.db").string();
    }
    return "";
}

}  // namespace

ThreadSplit default_thread_split(int num_cores) {
    num_cores = std::max(num_cores, 1);
    ThreadSplit split;
    split.num_io_threads = num_cores <= 4 ? 1 : 2;
    split.num_compute_threads = std::max(1, num_cores - split.num_io_threads);
    return split;
}

std::span<const FlagSpec> serve_flags() { return kFlags; }

Result<ServeOptions> parse_serve_options(const CliArgs& flags) {
    ServeOptions o;
    o.model_dir = flags.get("model");
    if (o.model_dir.empty()) o.model_dir = default_model_dir();
    if (o.model_dir.empty()) return invalid_argument("--model is required (no default model found beside the executable)");
    o.served_model_name = flags.get("served-model-name");
    if (o.served_model_name.empty()) o.served_model_name = served_name(o.model_dir);
    auto device = executor::parse_device_kind(flags.get("device"));
    HICHAT_RETURN_IF_ERROR(device.status());
    o.device = *device;
    auto quantization = model::parse_load_quantization(flags.get("quantization"));
    HICHAT_RETURN_IF_ERROR(quantization.status());
    o.checkpoint.quantization = *quantization;
    auto kv_dtype = executor::parse_kv_cache_dtype(flags.get("kv-cache-dtype"));
    HICHAT_RETURN_IF_ERROR(kv_dtype.status());
    o.kv_cache_dtype = *kv_dtype;
    auto placement = parse_placement_flags(flags);
    HICHAT_RETURN_IF_ERROR(placement.status());
    o.placement = *placement;
    HICHAT_RETURN_IF_ERROR(check_device_flags(flags, o.device));
    auto fraction = flags.get_double("gpu-memory-fraction");
    HICHAT_RETURN_IF_ERROR(fraction.status());
    o.gpu_memory_fraction = *fraction;
    if (flags.has("host-kv-cache-gb")) {
        auto gb = flags.get_double("host-kv-cache-gb");
        HICHAT_RETURN_IF_ERROR(gb.status());
        o.host_kv_cache_bytes = static_cast<int64_t>(*gb * static_cast<double>(int64_t{1} << 30));
    }
    o.http.host = flags.get("host");
    o.http.tls_cert_file = flags.get("tls-cert");
    o.http.tls_key_file = flags.get("tls-key");
    o.api_keys = flags.get_all("api-key");
    o.api_key_files = flags.get_all("api-key-file");
    o.deny_list_file = flags.get("deny-list");
    o.access_log = flags.get("access-log");
    o.step_log = flags.get("step-log");
    o.sessions.path = flags.get("session-db");
    o.session_db_is_default = o.sessions.path.empty();
    if (o.session_db_is_default) o.sessions.path = default_session_db();
    if (o.sessions.path.empty()) {
        return invalid_argument("--session-db is required here: neither XDG_DATA_HOME nor HOME is set");
    }
    o.files_dir = flags.get("files-dir");
    if (o.files_dir.empty() && o.sessions.path != ":memory:") {
        const std::filesystem::path db(o.sessions.path);
        o.files_dir = (db.parent_path() / (db.stem().string() + "-files")).string();
    }
    o.http.cors.allowed_origins = flags.get_all("allowed-origin");
    o.engine.prefix_cache = !flags.has("no-prefix-cache");
    if (!o.engine.prefix_cache) o.host_kv_cache_bytes = 0;
    for (const std::string& origin : o.http.cors.allowed_origins) {
        Status s = api::check_allowed_origin(origin);
        if (!s.ok()) return invalid_argument("--allowed-origin: " + s.message());
    }

    // A GPU takes much larger batches and prefill chunks than the CPU path.
    const bool gpu = o.device == executor::DeviceKind::kCuda ||
                     (o.device == executor::DeviceKind::kAuto && executor::cuda_available());
    auto ints = read_ints(flags, gpu);
    HICHAT_RETURN_IF_ERROR(ints.status());
    HICHAT_RETURN_IF_ERROR(check_combinations(flags, *ints));
    apply_ints(*ints, o);
    HICHAT_RETURN_IF_ERROR(read_scheduling(flags, o.engine.scheduler, o.engine.max_queue_wait_ms, o.key_weights));
    HICHAT_RETURN_IF_ERROR(read_webhook_flags(flags, o));
    HICHAT_RETURN_IF_ERROR(o.http.validate());
    HICHAT_RETURN_IF_ERROR(o.engine.validate());
    HICHAT_RETURN_IF_ERROR(o.quota.validate());
    return o;
}

}  // namespace hichat::tools
