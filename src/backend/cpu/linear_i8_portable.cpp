// The int8 activations of linear_i8 (every level) and the portable linear_i8: plain integer loops,
// the reference the SIMD paths must equal exactly.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu {

void quantize_row_int8(const float* x, int64_t k, uint8_t* codes, float* scale) {
    float amax = 0.0f;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(x[c]));
    const int64_t stride = int8_rows_stride(k);
    if (!(amax > 0.0f) || !std::isfinite(amax)) {  // a zero row; an infinite one gives inf * 0: NaN out
        *scale = amax;
        std::fill(codes, codes + stride, uint8_t{128});
        return;
    }
    *scale = amax / 127.0f;
    const float inv = 127.0f / amax;
    for (int64_t c = 0; c < k; ++c) {
        const float q = std::clamp(std::nearbyint(x[c] * inv), -127.0f, 127.0f);
        codes[c] = static_cast<uint8_t>(static_cast<int>(q) + 128);
    }
    std::fill(codes + k, codes + stride, uint8_t{128});
}

namespace portable {

void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    for (int64_t i = 0; i < p.m; ++i) {
        const uint8_t* q = x.codes + i * x.stride;
        for (int64_t j = n_begin; j < n_end; ++j) {
            const int8_t* w = static_cast<const int8_t*>(p.w) + j * p.k;
            int32_t dot = 0;
            for (int64_t c = 0; c < p.k; ++c) dot += (static_cast<int32_t>(q[c]) - 128) * w[c];
            p.y[i * p.n + j] = (x.scales[i] * p.w_scale[j]) * static_cast<float>(dot);
        }
    }
}

}  // namespace portable
}  // namespace hichat::cpu
