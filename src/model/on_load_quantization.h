// Quantization of a bf16 / f16 / f32 checkpoint on load (`--quantization fp8|int8|q4`): each linear
// weight [N, K] becomes 8-bit codes with one fp32 scale per output row (fp8, int8) or 4-bit codes with
// an f16 scale per group of 32 (q4), and the activations are quantized per token at run time (what
// compressed-tensors' FP8_DYNAMIC and W8A8 schemes and vLLM's `--quantization fp8` do). int8 and q4
// also quantize the lm_head, to int8 (llama.cpp's Q8_0 quantizes it; its Q4_0 keeps it at 6 bits);
// embeddings, norms, and the lm_head under fp8 stay as they are.
//   fp8:  scale = amax(row) / 448, code = e4m3(w / scale) rounded to nearest even (nothing saturates).
//   int8: scale = amax(row) / 127, code = round(w / scale) (half away from zero), in [-127, 127]:
//         symmetric, so the codes mean q * scale exactly as an int8 W8A8 checkpoint's do.
//   q4:   per group of 32, m = the element of largest magnitude (with its sign), scale = f16(m / -8),
//         code = clamp(round(w / scale), -8, 7) + 8 (half away from zero): llama.cpp's Q4_0 values,
//         stored in the kernels' layout (base/q4_layout.h); a zero group: scale 0, codes 8.
// Per channel rather than per block of 32: one scale per row costs the int8 kernels nothing per
// block (their integer sums run the whole row), and on the golden families it moved the logits by
// about as much as the activations' per-token rounding does (tests/executor/int8_golden_test.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/huge_page_buffer.h"
#include "model/quant_config.h"
#include "model/weights.h"

namespace hichat::model {

// Writes the [N, K] weight `t` (kBF16, kF16 or kF32) as N * K codes into `q` and N scales into `scale`.
void quantize_rows_fp8(const WeightTensor& t, uint8_t* q, float* scale);
void quantize_rows_int8(const WeightTensor& t, int8_t* q, float* scale);
// Writes it as N rows of q4_row_bytes(K) bytes into `q` and N * q4_groups(K) f16 scales into `scale`.
void quantize_rows_q4(const WeightTensor& t, uint8_t* q, uint16_t* scale);

// Owns the codes and scales of every linear weight of a ModelWeights quantized as above to `codes`
// (kF8E4M3, kI8 or kQ4), in place: the views of `weights` are replaced by views into this owner, which
// must outlive them.
class OnLoadQuantization {
public:
    // Quantizes with up to `threads` threads (one tensor each at a time).
    OnLoadQuantization(ModelWeights& weights, DType codes, int threads);
    OnLoadQuantization(const OnLoadQuantization&) = delete;
    OnLoadQuantization& operator=(const OnLoadQuantization&) = delete;

    int64_t num_quantized() const { return num_quantized_; }
    // The QuantConfig that describes the result (per-channel weights, or [1, 32] blocks for kQ4; dynamic
    // per-token activations).
    static QuantConfig config(DType codes);

private:
    HugePageBuffer arena_;
    int64_t num_quantized_ = 0;   // every tensor's codes, then its scales (the CPU streams them each step)
};

}  // namespace hichat::model
