// QuantConfig: how a checkpoint's linear layers are quantized, read from config.json's
// `quantization_config` (or ModelOpt's hf_quant_config.json). HiChat reads the FP8 (E4M3) formats:
// compressed-tensors `float-quantized` (per-tensor, per-channel or block scales), Hugging Face
// `quant_method: "fp8"` (block scales in `weight_scale_inv`, or AutoFP8's per-tensor scales) and
// ModelOpt `FP8` / `FP8_PER_CHANNEL_PER_TOKEN`; and the integer formats (int_quant_config.cpp):
// GPTQ and AWQ 4-bit, compressed-tensors `pack-quantized` (4- or 8-bit) and `int-quantized` (int8).
// Every other method or option is refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"

namespace hichat::model {

// The most inputs (k) of a linear layer the CPU's int8 and 4-bit kernels take: they sum a row in
// int32 over int8 activations (backend/cpu kInt8MaxK).
inline constexpr int64_t kIntegerKernelsMaxK = int64_t{1} << 16;

// kOnLoad: --quantization fp8, int8 or q4, applied by Checkpoint::open.
enum class QuantMethod { kNone, kCompressedTensors, kHfFp8, kModelOpt, kGptq, kAwq, kOnLoad };

// How an integer checkpoint stores each linear layer's codes (repacked on load: model/int_weights.h).
enum class IntPacking {
    kNone,
    kGptq,       // qweight I32 [K/8, N] (along K), qzeros I32 [groups, N/8], scales F16 [groups, N], g_idx
    kAwq,        // qweight I32 [K, N/8] (along N, nibble order 0 2 4 6 1 3 5 7), qzeros likewise, scales
    kCtPacked,   // weight_packed I32 [N, K/(32/bits)] (along K, value + 2^(bits-1)), weight_scale, ...
    kCtInt8,     // weight I8 [N, K], weight_scale [N, 1]
};

// How the weight scales cover a [N, K] weight: one scale, one per output row, or one per block.
enum class WeightScaleKind { kTensor, kChannel, kBlock };

// How the checkpoint's producer quantized the activations entering each quantized linear layer.
enum class ActivationQuant {
    kNone,          // weights only (W8A16)
    kStaticTensor,  // one scale per tensor from calibration: `<module>.input_scale`
    kDynamicToken,  // a scale per token, computed at run time
    kDynamicGroup,  // a scale per token and group of `activation_group` channels, at run time
};

struct QuantConfig {
    QuantMethod method = QuantMethod::kNone;
    DType weight_dtype = DType::kF8E4M3;    // the quantized weights' codes: F8_E4M3, or I8 (--quantization int8)
    WeightScaleKind weight_scale = WeightScaleKind::kTensor;
    int block_rows = 0, block_cols = 0;     // kBlock: the [N, K] extent of one scale (128 x 128)
    ActivationQuant activations = ActivationQuant::kNone;
    int activation_group = 0;               // kDynamicGroup
    std::string scale_name = "weight_scale";  // the scale tensor's last name part ("weight_scale_inv")
    // Linear modules left unquantized: exact names ("lm_head"), "re:<regex>" matched from the start
    // of the name (compressed-tensors), or fnmatch patterns with * and ? (ModelOpt).
    std::vector<std::string> ignore;
    bool kv_cache_fp8 = false;              // the producer calibrated FP8 KV scales (k_scale / v_scale)
    // Integer checkpoints (weight_dtype kQ4 for 4 bits, kI8 for 8):
    IntPacking packing = IntPacking::kNone;
    int bits = 0;                   // 4 or 8
    int group_size = 0;             // input columns per scale group; 0: one group per row (per channel)
    bool symmetric = true;          // false: a zero point per group (GPTQ qzeros, AWQ, weight_zero_point)
    bool act_order = false;         // groups given per column by g_idx (GPTQ desc_act, actorder "group")
    bool zeros_minus_one = false;   // GPTQ's v1 format stores zero - 1

    bool quantized() const { return method != QuantMethod::kNone; }
    // Whether the config quantizes the linear layer `module` (e.g. "model.layers.0.mlp.up_proj").
    bool quantizes(std::string_view module) const;
    // One line for logs, e.g. "compressed-tensors FP8, per-channel weight scales, dynamic per-token activations".
    std::string describe() const;
};

}  // namespace hichat::model
