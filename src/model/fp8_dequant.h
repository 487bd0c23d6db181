// FP8 weights as bf16, for the kernels that read bf16/f16/f32 weights (the CPU backend, and the
// CUDA runner until its FP8 GEMMs take them): element [n, k] = bf16(fp8(q) * scale), the value
// transformers' dequantization computes in float32 and rounds to the model's dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/weights.h"

namespace hichat::model {

// Writes the [N, K] FP8 weight `t` dequantized into `out` (N * K bf16 values). `t` must be kF8E4M3.
void dequantize_fp8_to_bf16(const WeightTensor& t, uint16_t* out);

// A copy of a ModelWeights in which every FP8 tensor is replaced by a bf16 view of its dequantized
// values, owned here; every other view is shared with the original (which must outlive this).
class DequantizedWeights {
public:
    explicit DequantizedWeights(const ModelWeights& weights);
    DequantizedWeights(const DequantizedWeights&) = delete;
    DequantizedWeights& operator=(const DequantizedWeights&) = delete;

    const ModelWeights& weights() const { return weights_; }
    int64_t num_dequantized() const { return static_cast<int64_t>(buffers_.size()); }

private:
    void replace(WeightTensor& t);

    ModelWeights weights_;
    std::vector<std::unique_ptr<uint16_t[]>> buffers_;
};

}  // namespace hichat::model
