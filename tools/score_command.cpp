#include "score_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"

namespace hichat::tools {
namespace {

Result<std::vector<int32_t>> parse_ids(const std::string& text, int vocab_size) {
    std::vector<int32_t> ids;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 0 || v >= vocab_size) {
            return invalid_argument("--ids: '" + item + "' is not a token id in [0, " + std::to_string(vocab_size) +
                                    ")");
        }
        ids.push_back(static_cast<int32_t>(v));
    }
    if (ids.empty()) return invalid_argument("--ids: no token ids given");
    return ids;
}

Status write_floats(const std::string& path, const std::vector<float>& values) {
    std::ofstream out(path, std::ios::binary);
    if (!out) return invalid_argument(path + ": cannot open for writing");
    static_assert(std::endian::native == std::endian::little, "logits are written little-endian");
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
    if (!out) return invalid_argument(path + ": write failed");
    return ok_status();
}

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "model", .value_name = "DIR", .help = "model folder (config.json, *.safetensors)", .required = true},
    {.name = "ids", .value_name = "1,2,3", .help = "the token ids to score, comma-separated", .required = true},
    {.name = "out", .value_name = "FILE", .help = "where the float32 logits go", .required = true},
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
};
// clang-format on

Status run(const CliArgs& flags) {
    const std::string dir = flags.get("model"), ids_text = flags.get("ids"), out_path = flags.get("out");
    auto threads = flags.get_int("threads");
    HICHAT_RETURN_IF_ERROR(threads.status());

    auto quantization = model::parse_load_quantization(flags.get("quantization"));
    HICHAT_RETURN_IF_ERROR(quantization.status());
    auto checkpoint = model::Checkpoint::open(dir, {.quantization = *quantization});
    HICHAT_RETURN_IF_ERROR(checkpoint.status());
    const model::ModelConfig& cfg = (*checkpoint)->config();
    auto ids = parse_ids(ids_text, cfg.vocab_size);
    HICHAT_RETURN_IF_ERROR(ids.status());
    const int num_ids = static_cast<int>(ids->size());
    if (num_ids > cfg.max_position_embeddings) {
        return invalid_argument("--ids: " + std::to_string(num_ids) + " ids exceed the model's context of " +
                                std::to_string(cfg.max_position_embeddings));
    }
    auto device = executor::parse_device_kind(flags.get("device"));
    HICHAT_RETURN_IF_ERROR(device.status());
    auto kv_dtype = executor::parse_kv_cache_dtype(flags.get("kv-cache-dtype"));
    HICHAT_RETURN_IF_ERROR(kv_dtype.status());
    const executor::RunnerOptions options{.device = *device,
                                          .num_threads = static_cast<int>(*threads),
                                          .max_num_seqs = 1,
                                          .max_num_tokens_per_step = num_ids,
                                          .max_context_tokens = num_ids,
                                          .kv_cache_dtype = *kv_dtype};
    const auto table = executor::identity_block_table(num_ids, options.kv_block_size_tokens);
    auto choice = executor::choose_device(cfg, options, executor::cuda_presence());
    HICHAT_RETURN_IF_ERROR(choice.status());
    if (!choice->note.empty()) std::fprintf(stderr, "hichat score: %s\n", choice->note.c_str());
    auto runner = executor::make_runner(**checkpoint, options);
    HICHAT_RETURN_IF_ERROR(runner.status());
    executor::ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = *ids, .all_logits = true});
    std::vector<float> logits;
    (*runner)->forward(batch, logits);
    return write_floats(out_path, logits);
}

int score_main(const CliArgs& flags) {
    Status s = run(flags);
    if (s.ok()) return 0;
    std::fprintf(stderr, "hichat score: %s\n", s.message().c_str());
    return 2;
}

}  // namespace

const Command& score_command() {
    static const Command command{
        .name = "score",
        .summary = "write the logits of every position of a list of token ids (no tokenizer needed)",
        .details =
            "Writes float32 little-endian logits [number of ids x vocab] to --out, one row per position.\n",
        .flags = kFlags,
        .run = score_main};
    return command;
}

}  // namespace hichat::tools
