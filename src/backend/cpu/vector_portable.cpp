// Attention's row kernels (q.k over key rows, weighted sum of value rows) in plain C++, over fp32 rows
// and over bf16 / f16 rows widened element by element.
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::portable {
namespace {

float widen_bf16(uint16_t h) { return bf16_to_f32(h); }
float widen_f16(uint16_t h) { return f16_to_f32(h); }

// dot() with b stored as 16-bit elements that Widen turns into fp32.
template <float (*Widen)(uint16_t)>
float dot_half(const float* a, const uint16_t* b, int64_t n) {
    float acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * Widen(b[i + j]);
    for (; i < n; ++i) acc[0] += a[i] * Widen(b[i]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

template <float (*Widen)(uint16_t)>
void dot_rows_half(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                   float* out) {
    for (int64_t j = 0; j < num_rows; ++j) out[j] = dot_half<Widen>(q, rows + j * row_stride, dim);
}

template <float (*Widen)(uint16_t)>
void sum_rows_weighted_half(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                            int64_t dim, float* out) {
    for (int64_t j = 0; j < num_rows; ++j) {
        const uint16_t* row = rows + j * row_stride;
        for (int64_t d = 0; d < dim; ++d) out[d] += weights[j] * Widen(row[d]);
    }
}

}  // namespace

float dot(const float* a, const float* b, int64_t n) {
    float acc[8] = {};  // independent partial sums, so the compiler may keep them in vector lanes
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
    for (; i < n; ++i) acc[0] += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void dot_rows(const float* q, const float* rows, int64_t row_stride, int64_t num_rows, int64_t dim, float* out) {
    for (int64_t j = 0; j < num_rows; ++j) out[j] = dot(q, rows + j * row_stride, dim);
}

void sum_rows_weighted(const float* weights, const float* rows, int64_t row_stride, int64_t num_rows,
                       int64_t dim, float* out) {
    for (int64_t j = 0; j < num_rows; ++j) {
        const float* row = rows + j * row_stride;
        for (int64_t d = 0; d < dim; ++d) out[d] += weights[j] * row[d];
    }
}

void dot_rows_bf16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                   float* out) {
    dot_rows_half<widen_bf16>(q, rows, row_stride, num_rows, dim, out);
}

void dot_rows_f16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                  float* out) {
    dot_rows_half<widen_f16>(q, rows, row_stride, num_rows, dim, out);
}

void sum_rows_weighted_bf16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                            int64_t dim, float* out) {
    sum_rows_weighted_half<widen_bf16>(weights, rows, row_stride, num_rows, dim, out);
}

void sum_rows_weighted_f16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                           int64_t dim, float* out) {
    sum_rows_weighted_half<widen_f16>(weights, rows, row_stride, num_rows, dim, out);
}

void softmax(float* x, int64_t n, float scale) {
    float max_value = -INFINITY;
    for (int64_t j = 0; j < n; ++j) max_value = std::max(max_value, x[j] * scale);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) sum += (x[j] = std::exp(x[j] * scale - max_value));
    const float inv_sum = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j) x[j] *= inv_sum;
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

}  // namespace hichat::cpu::portable
