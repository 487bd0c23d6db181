#include "bench_engine_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "command_line.h"
#include "executor/runner_factory.h"
#include "placement_flags.h"
#include "model/checkpoint.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace hichat::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxPrefillTokens = 8192;

struct BenchOptions {
    std::string model_dir;
    int input_len = 128, output_len = 32, batch = 1, num_threads = 0, repeat = 3;
    std::vector<int> batches;   // --batch 1,32,64: one runner (sized for the largest), one line each
    bool overlap = true;        // decode step N + 1 submitted before step N's ids are collected
    executor::DeviceKind device = executor::DeviceKind::kAuto;
    model::CheckpointOptions checkpoint;   // --quantization
    executor::KvCacheDtype kv_cache_dtype = executor::KvCacheDtype::kAuto;
    PlacementFlags placement;   // --gpu-layers, --offload, --gpu-memory-gb
};

struct RunTimes {
    double prefill_s = 0, decode_s = 0;
};

Result<std::vector<int>> parse_batches(const std::string& text) {
    std::vector<int> out;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 1 || v > 4096)
            return invalid_argument("--batch must be a comma-separated list of integers in [1, 4096], got '" + text + "'");
        out.push_back(static_cast<int>(v));
        at = comma + 1;
    }
    return out;
}

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "model", .value_name = "DIR", .help = "model folder (config.json, *.safetensors)", .required = true},
    {.name = "input-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "128",
     .help = "random prompt ids per sequence", .min = 1, .max = 1 << 20},
    {.name = "output-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "32",
     .help = "tokens decoded per sequence (greedy, no EOS)", .min = 1, .max = 1 << 20},
    {.name = "batch", .value_name = "B[,B...]", .default_value = "1",
     .help = "sequences run together; a list gives one line per batch size, each in [1, 4096]"},
    {.name = "threads", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "CPU compute threads, at most 4 per online core; 0: all cores", .min = 0, .max = 1024,
     .max_per_online_core = 4},
    {.name = "repeat", .kind = FlagKind::kInt, .value_name = "R", .default_value = "3",
     .help = "timed runs per batch size; the median is reported", .min = 1, .max = 100},
    {.name = "device", .value_name = "auto|cpu|cuda", .default_value = "auto",
     .help = "where the model runs; auto: CUDA when a device is present"},
    {.name = "quantization", .value_name = "none|fp8|int8|q4", .default_value = "none",
     .help = "quantize a bf16 checkpoint's linear weights on load: fp8 / int8 per-channel scales, q4 4-bit "
             "per group of 32 (int8, q4: CPU only)"},
    {.name = "kv-cache-dtype", .value_name = "auto|bf16|f16|fp32|fp8", .default_value = "auto",
     .help = "KV cache element type. CUDA: bf16 (auto) or fp8 (E4M3 with the checkpoint's k/v scales, 1.0 "
             "where it has none: twice the tokens); CPU: fp32 (auto), bf16 or f16 (half the memory: twice the tokens)"},
    kGpuLayersFlag,
    kOffloadFlag,
    kGpuMemoryGbFlag,
    {.name = "no-overlap", .kind = FlagKind::kBool,
     .help = "collect each decode step's ids before submitting the next (default: pipelined)"},
};
// clang-format on

Result<BenchOptions> parse_options(const CliArgs& flags) {
    BenchOptions o;
    auto input_len = flags.get_int("input-len");
    auto output_len = flags.get_int("output-len");
    auto batches = parse_batches(flags.get("batch"));
    HICHAT_RETURN_IF_ERROR(batches.status());
    auto threads = flags.get_int("threads");
    auto repeat = flags.get_int("repeat");
    for (const Status* s : {&input_len.status(), &output_len.status(), &threads.status(), &repeat.status()}) {
        HICHAT_RETURN_IF_ERROR(*s);
    }
    o.model_dir = flags.get("model");
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
    o.input_len = static_cast<int>(*input_len);
    o.output_len = static_cast<int>(*output_len);
    o.batches = *batches;
    o.num_threads = static_cast<int>(*threads);
    o.repeat = static_cast<int>(*repeat);
    o.overlap = !flags.has("no-overlap");
    return o;
}

// Sequence b owns blocks [b * blocks_per_seq, (b + 1) * blocks_per_seq).
std::vector<std::vector<int32_t>> block_tables(const BenchOptions& o, int blocks_per_seq) {
    std::vector<std::vector<int32_t>> tables(static_cast<size_t>(o.batch));
    for (int b = 0; b < o.batch; ++b) {
        for (int i = 0; i < blocks_per_seq; ++i) tables[static_cast<size_t>(b)].push_back(b * blocks_per_seq + i);
    }
    return tables;
}

RunTimes run_once(executor::ModelRunner& runner, BenchOptions o, int vocab, uint64_t seed, int output_len) {
    o.output_len = output_len;
    sampling::Rng rng(seed);
    std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(o.batch));
    for (auto& p : prompts) {
        for (int i = 0; i < o.input_len; ++i) p.push_back(static_cast<int32_t>(rng.next_u64() % vocab));
    }
    std::vector<int32_t> ids, next(static_cast<size_t>(o.batch));
    const int context = o.input_len + o.output_len;
    const int blocks_per_seq = (context + runner.kv_block_size_tokens() - 1) / runner.kv_block_size_tokens();
    const auto tables = block_tables(o, blocks_per_seq);
    executor::ForwardBatch batch;
    for (int b = 0; b < o.batch; ++b) {
        batch.seqs.push_back({.block_table = tables[static_cast<size_t>(b)], .pos0 = 0, .tokens = prompts[b]});
    }

    // Greedy throughout (forward_argmax: on CUDA only the ids come back). Prefill in groups of whole
    // sequences of at most kMaxPrefillTokens tokens per forward pass.
    RunTimes t;
    auto t0 = Clock::now();
    for (int first = 0; first < o.batch;) {
        const int group = std::max(1, std::min(o.batch - first, kMaxPrefillTokens / o.input_len));
        executor::ForwardBatch prefill;
        prefill.seqs.assign(batch.seqs.begin() + first, batch.seqs.begin() + first + group);
        runner.forward_argmax(prefill, ids);
        std::copy(ids.begin(), ids.end(), next.begin() + first);
        first += group;
    }
    t.prefill_s = std::chrono::duration<double>(Clock::now() - t0).count();
    // Decode. With overlap, step s + 1 goes in before step s's ids come back: its tokens are the
    // placeholders -(b + 1), "row b of the previous step", which the runner resolves where the ids are.
    std::vector<int32_t> placeholders(static_cast<size_t>(o.batch));
    for (int b = 0; b < o.batch; ++b) placeholders[static_cast<size_t>(b)] = -(b + 1);
    const std::vector<executor::RowSampling> greedy(static_cast<size_t>(o.batch));
    auto t1 = Clock::now();
    for (int step = 1; step < o.output_len; ++step) {
        const bool chained = o.overlap && step > 1;
        for (int b = 0; b < o.batch; ++b) {
            batch.seqs[b].pos0 = o.input_len + step - 1;
            batch.seqs[b].tokens = std::span<const int32_t>(chained ? &placeholders[b] : &next[b], 1);
        }
        runner.submit(batch, greedy);
        if (!o.overlap) {
            runner.collect(ids);
            next = ids;
        } else if (chained) {
            runner.collect(ids);   // the previous step's
        }
    }
    if (o.overlap && o.output_len > 1) runner.collect(ids);
    t.decode_s = std::chrono::duration<double>(Clock::now() - t1).count();
    return t;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

nlohmann::json measure(executor::ModelRunner& runner, const BenchOptions& opts, bool on_cuda) {
    const int vocab = runner.model_config().vocab_size;
    // One short untimed run first: cuBLASLt plans, kernel loading and the first decode graphs.
    run_once(runner, opts, vocab, 99, std::min(opts.output_len, 8));
    std::vector<double> prefill, decode;
    for (int r = 0; r < opts.repeat; ++r) {
        RunTimes t = run_once(runner, opts, vocab, 1234 + static_cast<uint64_t>(r), opts.output_len);
        prefill.push_back(t.prefill_s);
        decode.push_back(t.decode_s);
    }
    const double prefill_s = median(prefill), decode_s = median(decode);
    const double decode_steps = std::max(1, opts.output_len - 1);
    const double total_out = static_cast<double>(opts.batch) * opts.output_len;
    return {
        {"engine", on_cuda ? "hichat-cuda" : "hichat-cpu"},
        {"model", opts.model_dir},
        {"weights", runner.model_config().quant.quantized() ? runner.model_config().quant.describe() : "as stored"},
        {"kv_cache", opts.kv_cache_dtype != executor::KvCacheDtype::kAuto ? executor::kv_cache_dtype_name(opts.kv_cache_dtype)
                     : on_cuda                                             ? "bf16"
                                                                           : "fp32"},
        {"threads", opts.num_threads > 0 ? opts.num_threads : static_cast<int>(std::thread::hardware_concurrency())},
        {"batch", opts.batch},
        {"prompt_len", opts.input_len},
        {"output_len", opts.output_len},
        {"prefill_tok_s", opts.batch * opts.input_len / prefill_s},
        {"ttft_ms", prefill_s * 1e3},
        {"ms_per_token", decode_s / decode_steps * 1e3},
        {"decode_tok_s", opts.batch * decode_steps / decode_s},
        {"output_tok_s", total_out / (prefill_s + decode_s)},
        {"repeat", opts.repeat},
        {"overlap", opts.overlap},
    };
}

Status run(const CliArgs& flags) {
    auto opts = parse_options(flags);
    HICHAT_RETURN_IF_ERROR(opts.status());
    auto checkpoint = model::Checkpoint::open(opts->model_dir, opts->checkpoint);
    HICHAT_RETURN_IF_ERROR(checkpoint.status());
    const model::ModelConfig& cfg = (*checkpoint)->config();
    const int context = opts->input_len + opts->output_len;
    if (context > cfg.max_position_embeddings) return invalid_argument("--input-len + --output-len exceed the context");
    const int max_batch = *std::max_element(opts->batches.begin(), opts->batches.end());
    const int max_tokens = std::max(max_batch, std::min(max_batch * opts->input_len,
                                                        std::max(kMaxPrefillTokens, opts->input_len)));
    const executor::RunnerOptions options{.device = opts->device,
                                          .num_threads = opts->num_threads,
                                          .max_num_seqs = max_batch,
                                          .max_num_tokens_per_step = max_tokens,
                                          .max_context_tokens = context,
                                          .kv_cache_dtype = opts->kv_cache_dtype,
                                          .gpu_layers = opts->placement.gpu_layers,
                                          .offload = opts->placement.offload,
                                          .gpu_memory_bytes = opts->placement.gpu_memory_bytes};
    auto choice = executor::choose_device(cfg, options, executor::cuda_presence());
    HICHAT_RETURN_IF_ERROR(choice.status());
    if (!choice->note.empty()) std::fprintf(stderr, "hichat bench engine: %s\n", choice->note.c_str());
    std::string placement;
    auto made = executor::make_runner(**checkpoint, options, &placement);
    HICHAT_RETURN_IF_ERROR(made.status());
    if (!placement.empty()) std::fprintf(stderr, "hichat bench engine: layer placement:\n%s\n", placement.c_str());
    executor::ModelRunner& runner = **made;
    const bool on_cuda = choice->device == executor::DeviceKind::kCuda;
    const int block_tokens = runner.kv_block_size_tokens();
    const int64_t needed = int64_t{max_batch} * ((context + block_tokens - 1) / block_tokens);
    if (runner.num_kv_blocks() < needed) {
        return invalid_argument("the KV pool holds " + std::to_string(runner.num_kv_blocks()) + " blocks of " +
                                std::to_string(block_tokens) + " tokens; batch " + std::to_string(max_batch) +
                                " of " + std::to_string(context) + " tokens needs " + std::to_string(needed) +
                                " (raise --gpu-memory-gb, or lower --batch or the lengths)");
    }
    std::printf("%-8s %-8s %-8s %-14s %-14s %-14s\n", "batch", "prompt", "output", "prefill tok/s", "ms/step",
                "output tok/s");
    for (int b : opts->batches) {
        BenchOptions o = *opts;
        o.batch = b;
        const nlohmann::json line = measure(runner, o, on_cuda);
        std::printf("%-8d %-8d %-8d %-14.1f %-14.2f %-14.2f\n", b, o.input_len, o.output_len,
                    line["prefill_tok_s"].get<double>(), line["ms_per_token"].get<double>(),
                    line["output_tok_s"].get<double>());
        std::printf("%s\n", line.dump().c_str());
        std::fflush(stdout);
    }
    return ok_status();
}

int bench_engine_main(const CliArgs& flags) {
    Status s = run(flags);
    if (s.ok()) return 0;
    std::fprintf(stderr, "hichat bench engine: %s\n", s.message().c_str());
    return 2;
}

}  // namespace

const Command& bench_engine_command() {
    static const Command command{
        .name = "bench engine",
        .summary = "time prefill and decode of random prompts on the runner alone (no server)",
        .details =
            "B sequences of random ids are prefilled together, then decoded together greedily. Prints a\n"
            "table and one JSON line per batch size (median of the repeats).\n",
        .flags = kFlags,
        .run = bench_engine_main};
    return command;
}

int bench_engine_main(const std::vector<std::string>& args) {
    return run_command(bench_engine_command(), args);
}

}  // namespace hichat::tools
