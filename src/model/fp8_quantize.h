// FP8 quantization of a bf16 / f16 / f32 checkpoint on load (`--quantization fp8`): each linear
// weight [N, K] becomes E4M3 codes with one fp32 scale per output row, scale = amax(row) / 448 and
// code = e4m3(w / scale) rounded to nearest even (|w / scale| <= 448, so nothing saturates); the
// activations are quantized per token at run time (what compressed-tensors' FP8_DYNAMIC scheme and
// vLLM's `--quantization fp8` do). Embeddings, norms and the lm_head stay as they are.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/quant_config.h"
#include "model/weights.h"

namespace hichat::model {

// Writes the [N, K] weight `t` (kBF16, kF16 or kF32) as N * K codes into `q` and N scales into `scale`.
void quantize_rows_fp8(const WeightTensor& t, uint8_t* q, float* scale);

// Owns the codes and scales of every linear weight of a ModelWeights quantized as above (in place:
// the views of `weights` are replaced by FP8 views into this owner, which must outlive them).
class Fp8Quantization {
public:
    // Quantizes with up to `threads` threads (one tensor each at a time).
    Fp8Quantization(ModelWeights& weights, int threads);
    Fp8Quantization(const Fp8Quantization&) = delete;
    Fp8Quantization& operator=(const Fp8Quantization&) = delete;

    int64_t num_quantized() const { return static_cast<int64_t>(codes_.size()); }
    // The QuantConfig that describes the result (per-channel weights, dynamic per-token activations).
    static QuantConfig config();

private:
    std::vector<std::unique_ptr<uint8_t[]>> codes_;
    std::vector<std::unique_ptr<float[]>> scales_;
};

}  // namespace hichat::model
