#include "executor/cuda_support.h"

#include <cstdint>

namespace hichat::executor {
namespace {

// backend/cuda: the attention kernels are instantiated for these head sizes only (attention.cu).
constexpr int kHeadDims[] = {64, 80, 96, 128, 256};
// sampling.cu kMaxVocab: vocab * 2^40 fixed-point mass fits in uint64.
constexpr int64_t kMaxVocab = int64_t{1} << 23;
// CUDA grid dimensions y and z (the prefill grid is (kv heads, sequences, row tiles)).
constexpr int64_t kMaxGridYz = 65535;
// attention_prefill.cu kBlockRows: query rows (tokens x heads of one KV head) per prefill block.
constexpr int64_t kPrefillBlockRows = 64;
// attention_decode.cu kRows: query heads per decode block.
constexpr int64_t kDecodeRows = 16;

std::optional<std::string> head_reason(const model::ModelConfig& cfg) {
    bool known = false;
    for (int d : kHeadDims) known = known || cfg.head_dim == d;
    if (!known) {
        return "the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has " + std::to_string(cfg.head_dim);
    }
    if (cfg.num_kv_heads <= 0 || cfg.num_heads <= 0 || cfg.num_heads % cfg.num_kv_heads != 0) {
        return "the CUDA backend needs num_attention_heads (" + std::to_string(cfg.num_heads) +
               ") to be a multiple of num_key_value_heads (" + std::to_string(cfg.num_kv_heads) + ")";
    }
    const int64_t group = cfg.num_heads / cfg.num_kv_heads;
    if (cfg.num_kv_heads * ((group + kDecodeRows - 1) / kDecodeRows) > kMaxGridYz) {
        return "the CUDA backend takes at most " + std::to_string(kMaxGridYz) +
               " attention blocks per sequence, this model's " + std::to_string(cfg.num_heads) + " heads need more";
    }
    return std::nullopt;
}

std::optional<std::string> bias_reason(const model::ModelConfig& cfg) {
    if (cfg.o_bias) {
        return "the CUDA backend has no o_proj bias (attention_bias: true on a Llama), this model has one";
    }
    if (cfg.mlp_bias) return "the CUDA backend has no MLP biases (mlp_bias: true), this model has them";
    return std::nullopt;
}

std::optional<std::string> weight_reason(const model::ModelConfig& cfg) {
    if (cfg.quant.quantized() && (cfg.quant.weight_dtype == DType::kI8 || cfg.quant.weight_dtype == DType::kQ4)) {
        return std::string("the CUDA backend runs bf16 and FP8 weights; ") +
               (cfg.quant.weight_dtype == DType::kI8 ? "int8" : "4-bit") + " weights (" + cfg.quant.describe() +
               ") run on the CPU backend";
    }
    return std::nullopt;
}

std::optional<std::string> step_reason(const model::ModelConfig& cfg, const CudaStepShape& step) {
    if (cfg.vocab_size > kMaxVocab) {
        return "the CUDA backend needs vocab_size <= " + std::to_string(kMaxVocab) + ", this model has " +
               std::to_string(cfg.vocab_size);
    }
    if (step.max_num_seqs > kMaxGridYz) {
        return "the CUDA backend takes at most " + std::to_string(kMaxGridYz) + " sequences per step, asked for " +
               std::to_string(step.max_num_seqs);
    }
    // The longest query of a step (at most max_num_tokens_per_step) times the group of query heads
    // sharing a KV head, in prefill row tiles.
    const int64_t group = cfg.num_heads / cfg.num_kv_heads;
    const int64_t max_tokens = kMaxGridYz * kPrefillBlockRows / group;
    if (step.max_num_tokens_per_step > max_tokens) {
        return "the CUDA backend takes at most " + std::to_string(max_tokens) + " tokens per step with " +
               std::to_string(group) + " query heads per KV head, asked for " +
               std::to_string(step.max_num_tokens_per_step);
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> cuda_unsupported_reason(const model::ModelConfig& cfg, const CudaStepShape& step) {
    if (auto r = head_reason(cfg)) return r;
    if (auto r = bias_reason(cfg)) return r;
    if (auto r = weight_reason(cfg)) return r;
    return step_reason(cfg, step);
}

}  // namespace hichat::executor
