#include "serve_options.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "api/http/cors.h"
#include "cli_args.h"
#include "default_model.h"

namespace hichat::tools {

const char* const kServeUsage =
    "  serve    [--model DIR (default: models/default)] [--host 127.0.0.1] [--port 8000] [--served-model-name NAME]\n"
    "           [--api-key KEY]... [--api-key-file FILE] [--rate-limit-rpm N] [--rate-limit-tpm N]\n"
    "           [--max-concurrent-per-key N] [--deny-list FILE] [--access-log FILE|-]\n"
    "           [--allowed-origin ORIGIN|*]... (CORS for browser pages; default: no cross-origin access)\n"
    "           [--tls-cert PEM --tls-key PEM] [--io-threads N] [--threads N]\n"
    "           [--max-num-seqs N] [--max-num-batched-tokens N] [--prefill-chunk N] [--max-queue N]\n"
    "           [--kv-cache-mb N] [--max-model-len N] [--request-timeout-s N] [--shutdown-drain-s N]\n"
    "           [--max-body-mb N] [--header-timeout-s N] [--body-timeout-s N]\n"
    "           [--device auto|cpu|cuda] [--gpu-memory-fraction F]\n";

namespace {

struct IntFlag {
    const char* name;
    int64_t fallback, min, max;
    int64_t* out;
};

}  // namespace

ThreadSplit default_thread_split(int num_cores) {
    num_cores = std::max(num_cores, 1);
    ThreadSplit split;
    split.num_io_threads = num_cores <= 4 ? 1 : 2;
    split.num_compute_threads = std::max(1, num_cores - split.num_io_threads);
    return split;
}

Result<ServeOptions> parse_serve_options(const std::vector<std::string>& args) {
    auto flags = CliArgs::parse(
        args,
        {"model", "host", "port", "served-model-name", "api-key", "api-key-file", "rate-limit-rpm", "rate-limit-tpm",
         "max-concurrent-per-key", "deny-list", "access-log", "allowed-origin", "tls-cert", "tls-key", "io-threads", "threads",
         "max-num-seqs", "max-num-batched-tokens", "prefill-chunk", "max-queue", "kv-cache-mb", "max-model-len",
         "request-timeout-s", "shutdown-drain-s", "max-body-mb", "header-timeout-s", "body-timeout-s", "device", "gpu-memory-fraction"},
        {});
    HICHAT_RETURN_IF_ERROR(flags.status());
    ServeOptions o;
    o.model_dir = flags->get("model", "");
    if (o.model_dir.empty()) o.model_dir = default_model_dir();
    if (o.model_dir.empty()) return invalid_argument("--model is required (no default model found beside the executable)");
    o.served_model_name = flags->get("served-model-name", "");
    if (o.served_model_name.empty()) {
        o.served_model_name = std::filesystem::path(o.model_dir).lexically_normal().filename().string();
        if (o.served_model_name.empty()) {
            o.served_model_name = std::filesystem::path(o.model_dir).lexically_normal().parent_path().filename().string();
        }
    }
    auto device = executor::parse_device_kind(flags->get("device", "auto"));
    HICHAT_RETURN_IF_ERROR(device.status());
    o.device = *device;
    auto fraction = flags->get_double("gpu-memory-fraction", 0.9, 0.05, 0.99);
    HICHAT_RETURN_IF_ERROR(fraction.status());
    o.gpu_memory_fraction = *fraction;
    o.http.host = flags->get("host", "127.0.0.1");
    o.http.tls_cert_file = flags->get("tls-cert", "");
    o.http.tls_key_file = flags->get("tls-key", "");
    o.api_keys = flags->get_all("api-key");
    o.api_key_files = flags->get_all("api-key-file");
    o.deny_list_file = flags->get("deny-list", "");
    o.access_log = flags->get("access-log", "");
    o.http.cors.allowed_origins = flags->get_all("allowed-origin");
    for (const std::string& origin : o.http.cors.allowed_origins) {
        Status s = api::check_allowed_origin(origin);
        if (!s.ok()) return invalid_argument("--allowed-origin: " + s.message());
    }

    // A GPU takes much larger batches and prefill chunks than the CPU path.
    const bool gpu = o.device == executor::DeviceKind::kCuda ||
                     (o.device == executor::DeviceKind::kAuto && executor::cuda_available());
    const int num_cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const ThreadSplit split = default_thread_split(num_cores);
    int64_t port = 0, io_threads = 0, threads = 0, rpm = 0, tpm = 0, per_key = 0, seqs = 0, tokens = 0, chunk = 0,
            queue = 0, kv_mb = 0, max_len = 0, timeout_s = 0, drain_s = 0, body_mb = 0, header_s = 0, body_s = 0;
    const IntFlag ints[] = {
        {"port", 8000, 0, 65535, &port},
        {"io-threads", split.num_io_threads, 1, 256, &io_threads},
        {"threads", -1, 0, 1024, &threads},  // -1: not given
        {"rate-limit-rpm", 0, 0, 1 << 30, &rpm},
        {"rate-limit-tpm", 0, 0, int64_t{1} << 40, &tpm},
        {"max-concurrent-per-key", 0, 0, 1 << 20, &per_key},
        {"max-num-seqs", gpu ? 256 : 64, 1, 4096, &seqs},
        {"max-num-batched-tokens", gpu ? 8192 : 512, 1, 1 << 20, &tokens},
        {"prefill-chunk", gpu ? 2048 : 256, 1, 1 << 20, &chunk},
        {"max-queue", 1024, 1, 1 << 20, &queue},
        {"kv-cache-mb", 0, 0, int64_t{1} << 24, &kv_mb},
        {"max-model-len", 0, 0, 1 << 24, &max_len},
        {"request-timeout-s", 0, 0, 86400, &timeout_s},
        {"shutdown-drain-s", 30, 0, 3600, &drain_s},
        {"max-body-mb", 8, 1, 1024, &body_mb},
        {"header-timeout-s", 10, 1, 3600, &header_s},
        {"body-timeout-s", 30, 1, 3600, &body_s},
    };
    for (const IntFlag& f : ints) {
        auto v = flags->get_int(f.name, f.fallback, f.min, f.max);
        HICHAT_RETURN_IF_ERROR(v.status());
        *f.out = *v;
    }
    o.http.port = static_cast<int>(port);
    o.http.num_io_threads = static_cast<int>(io_threads);
    o.http.shutdown_drain_ms = static_cast<int>(drain_s * 1000);
    o.http.max_body_bytes = static_cast<size_t>(body_mb) << 20;
    o.http.header_timeout_ms = static_cast<int>(header_s * 1000);
    o.http.body_timeout_ms = static_cast<int>(body_s * 1000);
    // Without --threads: the cores the I/O threads leave (at least one).
    o.num_threads = threads >= 0 ? static_cast<int>(threads) : std::max(1, num_cores - static_cast<int>(io_threads));
    o.quota = {.requests_per_minute = static_cast<int>(rpm), .tokens_per_minute = tpm,
               .max_concurrent = static_cast<int>(per_key)};
    o.engine.scheduler.max_num_seqs = static_cast<int>(seqs);
    o.engine.scheduler.max_num_tokens_per_step = static_cast<int>(std::max(tokens, seqs));
    o.engine.scheduler.prefill_chunk_tokens = static_cast<int>(chunk);
    o.engine.max_waiting = static_cast<int>(queue);
    o.kv_cache_bytes = kv_mb << 20;
    o.max_model_len = static_cast<int>(max_len);
    o.request_timeout_s = static_cast<int>(timeout_s);
    HICHAT_RETURN_IF_ERROR(o.http.validate());
    HICHAT_RETURN_IF_ERROR(o.engine.validate());
    HICHAT_RETURN_IF_ERROR(o.quota.validate());
    return o;
}

}  // namespace hichat::tools
