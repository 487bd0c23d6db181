// rope(): rotate-half rotary embedding, as transformers applies it (Llama, Qwen, Mistral).
#include <cmath>
#include <vector>

#include "backend/cpu/ops.h"
#include "base/check.h"

namespace hichat::cpu {

void rope_cos_sin(const int32_t* positions, int64_t m, const float* inv_freq, int head_dim, float* cos_sin) {
    CHECK_EQ(head_dim % 2, 0) << "rope head_dim must be even";
    const int half = head_dim / 2;
    for (int64_t i = 0; i < m; ++i) {
        float* cos_j = cos_sin + i * head_dim;
        float* sin_j = cos_j + half;
        for (int j = 0; j < half; ++j) {
            // transformers rounds the angle to fp32 (position * inv_freq in fp32) before cos/sin.
            const float angle = static_cast<float>(positions[i]) * inv_freq[j];
            cos_j[j] = static_cast<float>(std::cos(double{angle}));
            sin_j[j] = static_cast<float>(std::sin(double{angle}));
        }
    }
}

void rope_apply(float* x, int64_t m, int64_t row_stride, int num_heads, int head_dim, const float* cos_sin) {
    CHECK_EQ(head_dim % 2, 0) << "rope head_dim must be even";
    const int half = head_dim / 2;
    for (int64_t i = 0; i < m; ++i) {
        const float* cos_j = cos_sin + i * head_dim;
        const float* sin_j = cos_j + half;
        for (int h = 0; h < num_heads; ++h) {
            float* __restrict lo = x + i * row_stride + int64_t{h} * head_dim;
            float* __restrict hi = lo + half;
            for (int j = 0; j < half; ++j) {  // independent lanes: the compiler vectorises this
                const float x1 = lo[j], x2 = hi[j];
                lo[j] = x1 * cos_j[j] - x2 * sin_j[j];
                hi[j] = x2 * cos_j[j] + x1 * sin_j[j];
            }
        }
    }
}

void rope(float* x, int64_t m, int64_t row_stride, int num_heads, int head_dim, const int32_t* positions,
          const float* inv_freq) {
    thread_local std::vector<float> cos_sin;  // [m, head_dim]
    cos_sin.resize(static_cast<size_t>(m * head_dim));
    rope_cos_sin(positions, m, inv_freq, head_dim, cos_sin.data());
    rope_apply(x, m, row_stride, num_heads, head_dim, cos_sin.data());
}

}  // namespace hichat::cpu
