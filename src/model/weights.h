// Views of the checkpoint's tensors, as stored (bf16/f16/f32), in memory-mapped safetensors files.
// Views only: the Checkpoint that produced them owns the mappings and must outlive them.
#pragma once

#include <cstdint>
#include <vector>

#include "base/dtype.h"

namespace hichat::model {

// The dequantization scales of an FP8 or int8 weight [N, K]: element [n, k] means
// q[n, k] * scale[(n / block_rows) * grid_cols + k / block_cols], grid_cols = ceil(K / block_cols).
// One scale: block [N, K]; per channel: [1, K]; block-scaled checkpoints: [128, 128]. kQ4 weights:
// block [1, 32], f16, rows of q4_groups(K) scales (base/q4_layout.h), which pads them to whole lines.
struct QuantScales {
    const void* data = nullptr;   // F32, BF16 or F16, into a file map
    DType dtype = DType::kF32;
    int64_t block_rows = 0, block_cols = 0;
    float input_scale = 0.0f;     // the static activation scale, 0 when activations are dynamic or unquantized
    const uint8_t* zeros = nullptr;  // kQ4: each group's zero code, laid out as the scales; null: 8 (symmetric)
    // kQ4 of act-order checkpoints (model/int_weights.h): column c of the codes multiplies activation
    // input_order[c]; null: activation c.
    const int32_t* input_order = nullptr;
};

struct WeightTensor {
    const void* data = nullptr;   // nullptr: absent (e.g. no bias); into a file map, maybe unaligned
    DType dtype = DType::kF32;
    std::vector<int64_t> shape;   // row-major; a linear layer is [out_features, in_features]
    QuantScales scales;             // kF8E4M3, kI8 and kQ4 only

    bool present() const { return data != nullptr; }
    int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
    int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
    int64_t num_elements() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

struct LayerWeights {
    WeightTensor attn_norm;                 // [hidden]
    WeightTensor q_proj, k_proj, v_proj;    // [heads*head_dim, hidden], [kv_heads*head_dim, hidden] x2
    WeightTensor q_bias, k_bias, v_bias;    // [out] or absent
    WeightTensor o_proj;                    // [hidden, heads*head_dim]
    WeightTensor o_bias;                    // [hidden] or absent
    WeightTensor q_norm, k_norm;            // [head_dim] or absent (Qwen3)
    WeightTensor ffn_norm;                  // [hidden]
    WeightTensor gate_proj, up_proj;        // [intermediate, hidden]
    WeightTensor down_proj;                 // [hidden, intermediate]
    WeightTensor gate_bias, up_bias, down_bias;  // absent unless mlp_bias
    // FP8 KV cache scales (dequant multipliers) from the checkpoint; 0 when it has none.
    float k_scale = 0.0f, v_scale = 0.0f;
};

struct ModelWeights {
    WeightTensor embed_tokens;              // [vocab, hidden]
    std::vector<LayerWeights> layers;       // [num_layers]
    WeightTensor final_norm;                // [hidden]
    WeightTensor lm_head;                   // [vocab, hidden]; == embed_tokens when tied
};

}  // namespace hichat::model
