// FP8 weights as bf16, for the kernels that read bf16/f16/f32 weights (the CPU backend through
// model/host_weights.h, and the CUDA runner where its FP8 GEMMs cannot take a shape): element [n, k] = bf16(fp8(q) * scale), the value
// transformers' dequantization computes in float32 and rounds to the model's dtype.
#pragma once

#include <cstdint>

#include "model/weights.h"

namespace hichat::model {

// Writes the [N, K] FP8 weight `t` dequantized into `out` (N * K bf16 values). `t` must be kF8E4M3.
void dequantize_fp8_to_bf16(const WeightTensor& t, uint16_t* out);

}  // namespace hichat::model
