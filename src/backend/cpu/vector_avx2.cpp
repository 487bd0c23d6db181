// Attention's row kernels (q.k over key rows, weighted sum of value rows) for AVX2 + FMA + F16C, over
// fp32 rows and over bf16 / f16 rows widened in registers; compiled with those flags.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::avx2 {
namespace {

float hsum(__m256 v) {
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

// How a kernel reads 8 elements of a K/V row as fp32: as stored, or widened from bf16 (a 16-bit shift)
// or f16 (vcvtph2ps).
struct F32Rows {
    using T = float;
    static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float load1(const float* p) { return *p; }
};
struct Bf16Rows {
    using T = uint16_t;
    static __m256 load8(const uint16_t* p) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
    static float load1(const uint16_t* p) { return bf16_to_f32(*p); }
};
struct F16Rows {
    using T = uint16_t;
    static __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
    static float load1(const uint16_t* p) { return _cvtsh_ss(*p); }
};

// out[r] = q . rows[r]   for r < R.
template <class Rows, int R>
void dot_block(const float* q, const typename Rows::T* rows, int64_t row_stride, int64_t dim, float* out) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= dim; d += 8) {
        __m256 qv = _mm256_loadu_ps(q + d);
        for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(qv, Rows::load8(rows + r * row_stride + d), acc[r]);
    }
    for (int r = 0; r < R; ++r) {
        float sum = hsum(acc[r]);
        for (int64_t t = d; t < dim; ++t) sum += q[t] * Rows::load1(rows + r * row_stride + t);
        out[r] = sum;
    }
}

template <class Rows>
void dot_rows_of(const float* q, const typename Rows::T* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                 float* out) {
    int64_t j = 0;
    for (; j + 4 <= num_rows; j += 4) dot_block<Rows, 4>(q, rows + j * row_stride, row_stride, dim, out + j);
    for (; j < num_rows; ++j) dot_block<Rows, 1>(q, rows + j * row_stride, row_stride, dim, out + j);
}

template <class Rows>
void sum_rows_weighted_of(const float* weights, const typename Rows::T* rows, int64_t row_stride, int64_t num_rows,
                          int64_t dim, float* out) {
    constexpr int64_t kChunk = 64;  // 8 accumulators of 8 lanes
    for (int64_t d0 = 0; d0 < dim; d0 += kChunk) {
        int64_t count = std::min(kChunk, dim - d0);
        int64_t full = count / 8 * 8;
        __m256 acc[8];
        for (int c = 0; c * 8 < full; ++c) acc[c] = _mm256_loadu_ps(out + d0 + 8 * c);
        float tail[8] = {};
        for (int64_t j = 0; j < num_rows; ++j) {
            __m256 w = _mm256_set1_ps(weights[j]);
            const typename Rows::T* row = rows + j * row_stride + d0;
            for (int c = 0; c * 8 < full; ++c) acc[c] = _mm256_fmadd_ps(w, Rows::load8(row + 8 * c), acc[c]);
            for (int64_t t = full; t < count; ++t) tail[t - full] += weights[j] * Rows::load1(row + t);
        }
        for (int c = 0; c * 8 < full; ++c) _mm256_storeu_ps(out + d0 + 8 * c, acc[c]);
        for (int64_t t = full; t < count; ++t) out[d0 + t] += tail[t - full];
    }
}

// exp(x) for x <= 0 (softmax inputs after the max is subtracted), within 2 ulp: 2^n * p(r) with
// n = round(x / ln 2), r = x - n ln 2 (ln 2 split in two for exactness), p a degree-6 polynomial.
__m256 exp_nonpositive(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));  // keeps 2^n a normal float; exp(-87) ~ 1.6e-38
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(pow2n));
}

}  // namespace

void softmax(float* x, int64_t n, float scale) {
    float max_value = -INFINITY;
    for (int64_t j = 0; j < n; ++j) max_value = std::max(max_value, x[j] * scale);
    const __m256 vscale = _mm256_set1_ps(scale), vmax = _mm256_set1_ps(max_value);
    __m256 vsum = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 e = exp_nonpositive(_mm256_fmsub_ps(_mm256_loadu_ps(x + j), vscale, vmax));
        vsum = _mm256_add_ps(vsum, e);
        _mm256_storeu_ps(x + j, e);
    }
    float sum = hsum(vsum);
    for (; j < n; ++j) sum += (x[j] = std::exp(x[j] * scale - max_value));
    const float inv_sum = 1.0f / sum;
    for (j = 0; j < n; ++j) x[j] *= inv_sum;
}

void dot_rows(const float* q, const float* rows, int64_t row_stride, int64_t num_rows, int64_t dim, float* out) {
    dot_rows_of<F32Rows>(q, rows, row_stride, num_rows, dim, out);
}

void dot_rows_bf16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                   float* out) {
    dot_rows_of<Bf16Rows>(q, rows, row_stride, num_rows, dim, out);
}

void dot_rows_f16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                  float* out) {
    dot_rows_of<F16Rows>(q, rows, row_stride, num_rows, dim, out);
}

void sum_rows_weighted(const float* weights, const float* rows, int64_t row_stride, int64_t num_rows,
                       int64_t dim, float* out) {
    sum_rows_weighted_of<F32Rows>(weights, rows, row_stride, num_rows, dim, out);
}

void sum_rows_weighted_bf16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                            int64_t dim, float* out) {
    sum_rows_weighted_of<Bf16Rows>(weights, rows, row_stride, num_rows, dim, out);
}

void sum_rows_weighted_f16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                           int64_t dim, float* out) {
    sum_rows_weighted_of<F16Rows>(weights, rows, row_stride, num_rows, dim, out);
}

// silu(g) = g * sigmoid(g), with sigmoid from e = exp(-|g|) <= 1 (no overflow): 1 / (1 + e) for
// g >= 0, e / (1 + e) for g < 0.
void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    const __m256 one = _mm256_set1_ps(1.0f), sign_bit = _mm256_set1_ps(-0.0f);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 g = _mm256_loadu_ps(gate + j);
        const __m256 e = exp_nonpositive(_mm256_or_ps(g, sign_bit));  // exp(-|g|)
        const __m256 inv = _mm256_div_ps(one, _mm256_add_ps(one, e));
        const __m256 sigmoid = _mm256_blendv_ps(inv, _mm256_mul_ps(e, inv), g);  // sign of g picks
        _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid), _mm256_loadu_ps(up + j)));
    }
    for (; j < n; ++j) out[j] = gate[j] / (1.0f + std::exp(-gate[j])) * up[j];
}

}  // namespace hichat::cpu::avx2
