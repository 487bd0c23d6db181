// Test helpers: FP8 copies of a checkpoint in each layout HiChat reads, and the bf16 checkpoint of
// their dequantized values (the reference an FP8 run must equal where it dequantizes on load).
// The layouts are written from the producers' documentation (compressed-tensors / llm-compressor,
// transformers' FineGrainedFP8, ModelOpt's export), independently of src/model/quant_config.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "test_checkpoint_writer.h"

namespace hichat::model::testing {

enum class Fp8Layout {
    kCtTensorStatic,    // compressed-tensors FP8: per-tensor weight_scale [1], static input_scale [1], KV scales
    kCtChannelDynamic,  // compressed-tensors FP8_DYNAMIC: per-channel weight_scale [N, 1], dynamic per-token
    kCtBlock,           // compressed-tensors FP8_BLOCK: weight_scale [ceil(N/32), ceil(K/48)], dynamic groups
    kHfBlock,           // quant_method fp8, weight_block_size [128, 128]: weight_scale_inv
    kModelOpt,          // hf_quant_config.json FP8: scalar weight_scale and input_scale, k_proj.k_scale
};

std::vector<Fp8Layout> all_fp8_layouts();
std::string fp8_layout_name(Fp8Layout layout);

struct Fp8Checkpoint {
    TinyModel fp8;                          // quantization_config in config (unless ModelOpt)
    std::optional<Json> hf_quant_config;    // ModelOpt: written as hf_quant_config.json
    TinyModel dequantized;                  // bf16(fp8 * scale) in place of every FP8 weight; no scales

    void write_fp8(const std::string& dir) const;
};

// Quantizes every linear weight of `model` but lm_head ("*_proj.weight") to FP8 E4M3 with scales of
// amax / 448 per tensor, row or block, stored in `scale_dtype` (F32, BF16 or F16).
Fp8Checkpoint quantize_fp8(const TinyModel& model, Fp8Layout layout, const std::string& scale_dtype = "F32");

// config.json and model.safetensors of a checkpoint folder (the golden fixtures), tensors as stored.
TinyModel read_checkpoint(const std::string& dir);

}  // namespace hichat::model::testing
