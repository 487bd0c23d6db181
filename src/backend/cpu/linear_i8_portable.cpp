// The int8 activations of linear_i8 and linear_q4 (every level) and the portable linear_i8 and
// linear_q4: plain integer loops, the reference the SIMD paths must equal (exactly for int8; for
// 4-bit weights within the fp32 rounding of summing the groups in another order).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "base/dtype.h"
#include "base/q4_layout.h"

namespace hichat::cpu {

void quantize_row_int8(const float* x, int64_t k, uint8_t* codes, float* scale) {
    float amax = 0.0f;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(x[c]));
    const int64_t stride = int8_rows_stride(k);
    if (!(amax > 0.0f) || !std::isfinite(amax)) {  // a zero row; an infinite one gives inf * 0: NaN out
        *scale = amax;
        std::fill(codes, codes + stride, uint8_t{128});
    } else {
        *scale = amax / 127.0f;
        const float inv = 127.0f / amax;
        for (int64_t c = 0; c < k; ++c) {
            const float q = std::clamp(std::nearbyint(x[c] * inv), -127.0f, 127.0f);
            codes[c] = static_cast<uint8_t>(static_cast<int>(q) + 128);
        }
        std::fill(codes + k, codes + stride, uint8_t{128});
    }
}

void quantize_row_q4x(const float* x, int64_t k, uint8_t* codes, float* scale, float* group_sums) {
    float amax = 0.0f;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::fabs(x[c]));
    const int64_t padded = q4_padded(k);
    *scale = amax;
    if (!(amax > 0.0f) || !std::isfinite(amax)) {  // a zero row; an infinite one gives inf * 0: NaN out
        std::fill(codes, codes + padded, uint8_t{0});
        std::fill(group_sums, group_sums + padded / kQ4Group, 0.0f);
        return;
    }
    *scale = amax / 127.0f;
    const float inv = 127.0f / amax;
    // The codes in column order first (loops the compiler vectorizes), then each block's 4-byte words
    // moved to the weights' lane order: word 8 l + t (group l, plane t) to word 16 t + l.
    thread_local std::vector<int8_t> in_order;
    if (static_cast<int64_t>(in_order.size()) < padded) in_order.resize(static_cast<size_t>(padded));
    int8_t* q = in_order.data();
    for (int64_t c = 0; c < k; ++c) q[c] = static_cast<int8_t>(std::clamp(std::nearbyint(x[c] * inv), -127.0f, 127.0f));
    std::fill(q + k, q + padded, int8_t{0});
    for (int64_t g = 0; g < padded / kQ4Group; ++g) {
        int32_t sum = 0;
        for (int64_t c = 0; c < kQ4Group; ++c) sum += q[g * kQ4Group + c];
        group_sums[g] = static_cast<float>(sum);
    }
    for (int64_t b = 0; b < padded; b += kQ4BlockElements) {
        for (int64_t l = 0; l < kQ4GroupsPerBlock; ++l) {
            for (int64_t t = 0; t < 8; ++t) std::memcpy(codes + b + 64 * t + 4 * l, q + b + 32 * l + 4 * t, 4);
        }
    }
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

void linear_q4(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    const int64_t groups = q4_groups(p.k), row_bytes = q4_row_bytes(p.k);
    for (int64_t i = 0; i < p.m; ++i) {
        const auto* q = reinterpret_cast<const int8_t*>(x.codes + i * x.stride);
        const float* sums = x.group_sums + i * (x.stride / kQ4Group);
        for (int64_t j = n_begin; j < n_end; ++j) {
            const uint8_t* w = static_cast<const uint8_t*>(p.w) + j * row_bytes;
            float acc = 0.0f;
            for (int64_t g = 0; g < groups; ++g) {
                int32_t dot = 0;
                for (int64_t c = g * kQ4Group; c < (g + 1) * kQ4Group; ++c)
                    dot += static_cast<int32_t>(q[q4_x_index(c)]) * q4_code(w, c);
                const int zero = p.q4_zeros != nullptr ? p.q4_zeros[j * groups + g] : kQ4ZeroCode;
                const float term = static_cast<float>(dot) - static_cast<float>(zero) * sums[g];
                acc += f16_to_f32(p.q4_scales[j * groups + g]) * term;
            }
            p.y[i * p.n + j] = x.scales[i] * acc;
        }
    }
}

}  // namespace portable
}  // namespace hichat::cpu
