// rope(): rotate-half rotary embedding, as transformers applies it (Llama, Qwen, Mistral).
#include <cmath>
#include <vector>

#include "backend/cpu/ops.h"
#include "base/check.h"

namespace hichat::cpu {

void rope(float* x, int64_t m, int64_t row_stride, int num_heads, int head_dim, const int32_t* positions,
          const float* inv_freq) {
    CHECK_EQ(head_dim % 2, 0) << "rope head_dim must be even";
    const int half = head_dim / 2;
    thread_local std::vector<float> cos_sin;  // [2, half] for the current token
    cos_sin.resize(static_cast<size_t>(2 * half));
    float* cos_j = cos_sin.data();
    float* sin_j = cos_j + half;
    for (int64_t i = 0; i < m; ++i) {
        for (int j = 0; j < half; ++j) {
            // transformers rounds the angle to fp32 (position * inv_freq in fp32) before cos/sin.
            const float angle = static_cast<float>(positions[i]) * inv_freq[j];
            cos_j[j] = static_cast<float>(std::cos(double{angle}));
            sin_j[j] = static_cast<float>(std::sin(double{angle}));
        }
        for (int h = 0; h < num_heads; ++h) {
            float* head = x + i * row_stride + int64_t{h} * head_dim;
            for (int j = 0; j < half; ++j) {
                const float x1 = head[j], x2 = head[j + half];
                head[j] = x1 * cos_j[j] - x2 * sin_j[j];
                head[j + half] = x2 * cos_j[j] + x1 * sin_j[j];
            }
        }
    }
}

}  // namespace hichat::cpu
