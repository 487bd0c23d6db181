#include "generate_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "placement_flags.h"
#include "model/checkpoint.h"
#include "sampling/sampler.h"
#include "stop_tokens.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct GenerateOptions {
    std::string model_dir;
    std::string prompt;
    int max_tokens = 128;
    int num_threads = 0;
    executor::DeviceKind device = executor::DeviceKind::kAuto;
    model::CheckpointOptions checkpoint;
    executor::KvCacheDtype kv_cache_dtype = executor::KvCacheDtype::kAuto;
    PlacementFlags placement;   // --gpu-layers, --offload, --gpu-memory-gb
    bool ignore_eos = false;
    sampling::SamplingParams sampling;
};

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "model", .value_name = "DIR", .help = "model folder (config.json, *.safetensors, tokenizer)",
     .required = true},
    {.name = "prompt", .value_name = "TEXT", .help = "the text to continue (no chat template)", .required = true},
    {.name = "max-tokens", .kind = FlagKind::kInt, .value_name = "N", .default_value = "128",
     .help = "tokens to generate at most", .min = 1, .max = 1 << 20},
    {.name = "temperature", .kind = FlagKind::kNumber, .value_name = "T", .default_value = "1",
     .help = "sampling temperature; 0: greedy", .min = 0, .max = 100},
    {.name = "top-p", .kind = FlagKind::kNumber, .value_name = "P", .default_value = "1",
     .help = "nucleus sampling: keep the most likely tokens up to this probability mass", .min = 0, .max = 1,
     .min_excluded = true},
    {.name = "top-k", .kind = FlagKind::kInt, .value_name = "K", .default_value = "0",
     .help = "keep the K most likely tokens; 0: all", .min = 0, .max = 1 << 30},
    {.name = "min-p", .kind = FlagKind::kNumber, .value_name = "P", .default_value = "0",
     .help = "drop tokens less likely than P times the most likely one", .min = 0, .max = 1},
    {.name = "repetition-penalty", .kind = FlagKind::kNumber, .value_name = "R", .default_value = "1",
     .help = "penalize tokens already seen (as transformers does); 1: off", .min = 0, .max = 10},
    {.name = "seed", .kind = FlagKind::kUnsigned, .value_name = "S",
     .help = "sampling seed, for reproducible output", .default_note = "from the clock"},
    {.name = "threads", .kind = FlagKind::kInt, .value_name = "N", .default_value = "0",
     .help = "CPU compute threads, at most 4 per online core; 0: all cores", .min = 0, .max = 1024,
     .max_per_online_core = 4},
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
    {.name = "ignore-eos", .kind = FlagKind::kBool, .help = "keep generating past the end-of-sequence token"},
};
// clang-format on

Result<GenerateOptions> parse_options(const CliArgs& flags) {
    GenerateOptions o;
    o.model_dir = flags.get("model");
    o.prompt = flags.get("prompt");
    auto max_tokens = flags.get_int("max-tokens");
    auto threads = flags.get_int("threads");
    auto temperature = flags.get_double("temperature");
    auto top_p = flags.get_double("top-p");
    auto top_k = flags.get_int("top-k");
    auto min_p = flags.get_double("min-p");
    auto repetition = flags.get_double("repetition-penalty");
    auto seed = flags.get_optional_u64("seed");
    for (const Status* s : {&max_tokens.status(), &threads.status(), &temperature.status(), &top_p.status(),
                            &top_k.status(), &min_p.status(), &repetition.status(), &seed.status()}) {
        HICHAT_RETURN_IF_ERROR(*s);
    }
    o.max_tokens = static_cast<int>(*max_tokens);
    o.num_threads = static_cast<int>(*threads);
    o.ignore_eos = flags.has("ignore-eos");
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
    o.sampling.temperature = static_cast<float>(*temperature);
    o.sampling.top_p = static_cast<float>(*top_p);
    o.sampling.top_k = static_cast<int>(*top_k);
    o.sampling.min_p = static_cast<float>(*min_p);
    o.sampling.repetition_penalty = static_cast<float>(*repetition);
    o.sampling.seed = *seed;
    HICHAT_RETURN_IF_ERROR(o.sampling.validate());
    return o;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Status run(const CliArgs& flags) {
    auto opts = parse_options(flags);
    HICHAT_RETURN_IF_ERROR(opts.status());
    auto checkpoint = model::Checkpoint::open(opts->model_dir, opts->checkpoint);
    HICHAT_RETURN_IF_ERROR(checkpoint.status());
    auto tok = tokenizer::Tokenizer::load(opts->model_dir);
    HICHAT_RETURN_IF_ERROR(tok.status());
    const model::ModelConfig& cfg = (*checkpoint)->config();

    std::vector<int32_t> prompt = (*tok)->encode(opts->prompt);
    if (prompt.empty()) return invalid_argument("--prompt: the prompt encodes to no tokens");
    const int64_t total = static_cast<int64_t>(prompt.size()) + opts->max_tokens;
    if (total > cfg.max_position_embeddings) {
        return invalid_argument("--max-tokens: prompt (" + std::to_string(prompt.size()) + " tokens) + " +
                                std::to_string(opts->max_tokens) + " exceeds the model's context of " +
                                std::to_string(cfg.max_position_embeddings));
    }
    std::vector<int32_t> stop_ids = opts->ignore_eos ? std::vector<int32_t>{}
                                                     : stop_token_ids(opts->model_dir, cfg, **tok);

    const executor::RunnerOptions options{.device = opts->device,
                                          .num_threads = opts->num_threads,
                                          .max_num_seqs = 1,
                                          .max_num_tokens_per_step = static_cast<int>(prompt.size()),
                                          .max_context_tokens = static_cast<int>(total),
                                          .kv_cache_dtype = opts->kv_cache_dtype,
                                          .gpu_layers = opts->placement.gpu_layers,
                                          .offload = opts->placement.offload,
                                          .gpu_memory_bytes = opts->placement.gpu_memory_bytes};
    const auto table = executor::identity_block_table(static_cast<int>(total), options.kv_block_size_tokens);
    auto choice = executor::choose_device(cfg, options, executor::cuda_presence());
    HICHAT_RETURN_IF_ERROR(choice.status());
    if (!choice->note.empty()) std::fprintf(stderr, "hichat generate: %s\n", choice->note.c_str());
    std::string placement;
    auto made = executor::make_runner(**checkpoint, options, &placement);
    HICHAT_RETURN_IF_ERROR(made.status());
    if (!placement.empty()) std::fprintf(stderr, "hichat generate: layer placement:\n%s\n", placement.c_str());
    executor::ModelRunner& runner = **made;
    sampling::Sampler sampler(opts->sampling, static_cast<uint64_t>(Clock::now().time_since_epoch().count()));
    tokenizer::StreamingDetokenizer detok(**tok);
    std::vector<int32_t> generated;
    std::vector<float> logits;

    auto t0 = Clock::now();
    executor::ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = prompt, .all_logits = false});
    runner.forward(batch, logits);
    const double prefill_s = seconds_since(t0);

    auto t1 = Clock::now();
    int num_decode_steps = 0;
    for (;;) {
        int32_t next = sampler.sample(logits, prompt, generated);
        if (std::find(stop_ids.begin(), stop_ids.end(), next) != stop_ids.end()) break;
        generated.push_back(next);
        std::string delta = detok.push(next);
        std::fwrite(delta.data(), 1, delta.size(), stdout);
        std::fflush(stdout);
        if (static_cast<int>(generated.size()) >= opts->max_tokens) break;
        batch.seqs[0].pos0 = static_cast<int32_t>(prompt.size() + generated.size() - 1);
        batch.seqs[0].tokens = std::span<const int32_t>(&generated.back(), 1);
        runner.forward(batch, logits);
        ++num_decode_steps;
    }
    const double decode_s = seconds_since(t1);
    std::string rest = detok.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    std::fprintf(stderr, "prompt: %zu tokens, %.2f tokens/s; generation: %zu tokens, %.2f tokens/s\n",
                 prompt.size(), static_cast<double>(prompt.size()) / prefill_s, generated.size(),
                 num_decode_steps > 0 ? num_decode_steps / decode_s : 0.0);
    return ok_status();
}

int generate_main(const CliArgs& flags) {
    Status s = run(flags);
    if (s.ok()) return 0;
    std::fprintf(stderr, "hichat generate: %s\n", s.message().c_str());
    return 2;
}

}  // namespace

const Command& generate_command() {
    static const Command command{.name = "generate",
                                 .summary = "continue a prompt, streamed to stdout (tokens/s on stderr)",
                                 .flags = kFlags,
                                 .run = generate_main};
    return command;
}

}  // namespace hichat::tools
