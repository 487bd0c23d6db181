// Attention's row kernels (q.k over key rows, weighted sum of value rows) for AVX-512, over fp32 rows
// and over bf16 / f16 rows widened in registers; compiled with AVX-512 flags.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::avx512 {
namespace {

__mmask16 lanes(int64_t count) {  // the first min(count, 16) lanes
    return count >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
}

// How a kernel reads 16 elements of a K/V row as fp32 (all, or the lanes of a mask, the rest 0): as
// stored, or widened from bf16 (a 16-bit shift) or f16 (vcvtph2ps).
struct F32Rows {
    using T = float;
    static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
    static __m512 load(__mmask16 mask, const float* p) { return _mm512_maskz_loadu_ps(mask, p); }
};
struct Bf16Rows {
    using T = uint16_t;
    static __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
    static __m512 load(const uint16_t* p) { return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load(__mmask16 mask, const uint16_t* p) { return widen(_mm256_maskz_loadu_epi16(mask, p)); }
};
struct F16Rows {
    using T = uint16_t;
    static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
    static __m512 load(__mmask16 mask, const uint16_t* p) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p)); }
};

// out[r] = q . rows[r]   for r < R.
template <class Rows, int R>
void dot_block(const float* q, const typename Rows::T* rows, int64_t row_stride, int64_t dim, float* out) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    int64_t d = 0;
    for (; d + 16 <= dim; d += 16) {
        __m512 qv = _mm512_loadu_ps(q + d);
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(qv, Rows::load(rows + r * row_stride + d), acc[r]);
    }
    if (d < dim) {
        __mmask16 mask = lanes(dim - d);
        __m512 qv = _mm512_maskz_loadu_ps(mask, q + d);
        for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(qv, Rows::load(mask, rows + r * row_stride + d), acc[r]);
    }
    for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
}

template <class Rows>
void dot_rows_of(const float* q, const typename Rows::T* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                 float* out) {
    int64_t j = 0;
    for (; j + 4 <= num_rows; j += 4) dot_block<Rows, 4>(q, rows + j * row_stride, row_stride, dim, out + j);
    for (; j < num_rows; ++j) dot_block<Rows, 1>(q, rows + j * row_stride, row_stride, dim, out + j);
}

// out[0:dim] += sum_j weights[j] * rows[j, 0:dim]  for dim <= 16 * V, accumulating in registers.
template <class Rows, int V>
void weighted_sum_chunk(const float* weights, const typename Rows::T* rows, int64_t row_stride, int64_t num_rows,
                        int64_t dim, float* out) {
    __m512 acc[V];
    __mmask16 mask[V];
    for (int c = 0; c < V; ++c) {
        mask[c] = lanes(dim - 16 * c);
        acc[c] = _mm512_maskz_loadu_ps(mask[c], out + 16 * c);
    }
    for (int64_t j = 0; j < num_rows; ++j) {
        __m512 w = _mm512_set1_ps(weights[j]);
        const typename Rows::T* row = rows + j * row_stride;
        for (int c = 0; c < V; ++c) acc[c] = _mm512_fmadd_ps(w, Rows::load(mask[c], row + 16 * c), acc[c]);
    }
    for (int c = 0; c < V; ++c) _mm512_mask_storeu_ps(out + 16 * c, mask[c], acc[c]);
}

template <class Rows, int... Vs>
void weighted_sum_dispatch(int num_vectors, const float* weights, const typename Rows::T* rows, int64_t row_stride,
                           int64_t num_rows, int64_t dim, float* out, std::integer_sequence<int, Vs...>) {
    (void)((num_vectors == Vs + 1
                ? (weighted_sum_chunk<Rows, Vs + 1>(weights, rows, row_stride, num_rows, dim, out), true)
                : false) ||
           ...);
}

template <class Rows>
void sum_rows_weighted_of(const float* weights, const typename Rows::T* rows, int64_t row_stride, int64_t num_rows,
                          int64_t dim, float* out) {
    constexpr int64_t kChunk = 128;  // 8 accumulators of 16 lanes
    for (int64_t d0 = 0; d0 < dim; d0 += kChunk) {
        int64_t count = std::min(kChunk, dim - d0);
        int num_vectors = static_cast<int>((count + 15) / 16);
        weighted_sum_dispatch<Rows>(num_vectors, weights, rows + d0, row_stride, num_rows, count, out + d0,
                                    std::make_integer_sequence<int, 8>{});
    }
}

// exp(x) for x <= 0 (softmax inputs after the max is subtracted), within 2 ulp: 2^n * p(r) with
// n = round(x / ln 2), r = x - n ln 2 (ln 2 split in two for exactness), p a degree-6 polynomial.
__m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-103.0f));  // below this exp(x) is 0 in fp32
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

}  // namespace

void softmax(float* x, int64_t n, float scale) {
    const __m512 vscale = _mm512_set1_ps(scale);
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 mask = lanes(n - j);
        vmax = _mm512_mask_max_ps(vmax, mask, vmax, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + j), vscale));
    }
    const __m512 max_value = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 mask = lanes(n - j);
        __m512 e = exp_nonpositive(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(mask, x + j), vscale, max_value));
        vsum = _mm512_mask_add_ps(vsum, mask, vsum, e);
        _mm512_mask_storeu_ps(x + j, mask, e);
    }
    const __m512 inv_sum = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 mask = lanes(n - j);
        _mm512_mask_storeu_ps(x + j, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + j), inv_sum));
    }
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
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 mask = lanes(n - j);
        const __m512 g = _mm512_maskz_loadu_ps(mask, gate + j);
        const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(g)));
        const __m512 inv = _mm512_div_ps(one, _mm512_add_ps(one, e));
        const __mmask16 negative = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ);
        const __m512 sigmoid = _mm512_mask_mul_ps(inv, negative, e, inv);
        _mm512_mask_storeu_ps(out + j, mask, _mm512_mul_ps(_mm512_mul_ps(g, sigmoid), _mm512_maskz_loadu_ps(mask, up + j)));
    }
}

}  // namespace hichat::cpu::avx512
