// Test helpers: integer-quantized copies of a checkpoint in the layouts GPTQ (v1 and v2), AutoAWQ
// (GEMM) and compressed-tensors (pack-quantized 4-bit, int-quantized 8-bit) write, made from known
// integers, with the F32 checkpoint of their dequantized values as the reference a loader must equal.
// The layouts are written from the formats' published descriptions, independently of
// src/model/quant_config.cpp and src/model/checkpoint.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fp8_checkpoint_writer.h"
#include "test_checkpoint_writer.h"

namespace hichat::model::testing {

enum class IntLayout {
    kGptq,            // quant_method "gptq", bits 4, group_size 128, sym true, desc_act false, checkpoint_format "gptq" (v1: zeros stored minus 1)
    kGptqAsym,        // same, sym false (per-group zero points in 0..15)
    kGptqActOrder,    // desc_act true: g_idx is a permutation-based group map (see below)
    kGptqV2,          // checkpoint_format "gptq_v2": zeros stored as they are (no minus 1), sym false
    kAwq,             // quant_method "awq", bits 4, group_size 128, zero_point true, version "gemm"
    kCtW4A16,         // compressed-tensors pack-quantized, int 4-bit, strategy group 128, symmetric
    kCtW4A16Asym,     // same, symmetric false: weight_zero_point
    kCtW4A16ActOrder, // same as kCtW4A16 with actorder "group": weight_g_idx
    kCtW8A8,          // compressed-tensors int-quantized: int8 per channel symmetric, dynamic per-token int8 activations
    kCtW8A16,         // compressed-tensors int-quantized: int8 per channel symmetric, no input_activations
};
std::vector<IntLayout> all_int_layouts();
std::string int_layout_name(IntLayout layout);   // e.g. "gptq", "gptq_asym", "ct_w4a16_asym"
// What a layout stores: zero points (not symmetric), a g_idx column map (act-order), int8 codes (else 4-bit).
bool int_layout_symmetric(IntLayout layout);
bool int_layout_act_order(IntLayout layout);
bool int_layout_int8(IntLayout layout);

// The known integers of one quantized linear weight [n, k]:
//   w[r, c] = (q[r * k + c] - zero[r * groups + group_of_col[c]]) * scale[r * groups + group_of_col[c]]
// 4-bit: q in 0..15 (the unsigned nibble value as the format means it after decoding: GPTQ/AWQ raw
// nibble; compressed-tensors value+8), zero the effective zero point (GPTQ v1: stored+1, so possibly 16
// when the stored nibble is 15; symmetric formats: 8). int8: q in -127..127, zero 0, groups = 1.
struct IntLinear {
    std::string module;              // "model.layers.0.self_attn.q_proj"
    int64_t n = 0, k = 0;
    int bits = 4;
    int64_t groups = 1;              // scale groups per row
    std::vector<int32_t> q;          // [n * k]
    std::vector<int32_t> zero;       // [n * groups]
    std::vector<float> scale;        // [n * groups], each exactly representable in the stored scale dtype
    std::vector<int32_t> group_of_col;  // [k]
};
struct IntCheckpoint {
    TinyModel packed;        // config.json with its quantization_config, and the packed tensors
    TinyModel dequantized;   // the same model with each quantized weight replaced by its F32 values w above, no quantization_config
    std::vector<IntLinear> linears;
};
// Quantizes every linear weight "*_proj.weight" of `model` (not lm_head, not embeddings, not norms)
// with round-to-nearest on its own values (deterministic), then packs in `layout`.
IntCheckpoint quantize_int(const TinyModel& model, IntLayout layout, int group_size = 128);

}  // namespace hichat::model::testing
