// linear_i8() for AVX-512 with AVX512_VNNI: vpdpbusd multiplies 64 activation bytes (codes + 128,
// unsigned) by 64 int8 weights as they are stored (signed) and adds each four products into an
// int32 lane, so one instruction covers one 64-byte weight line for one token. The +128 is taken
// back per row as 128 * sum(w), which a second vpdpbusd (ones x w) sums on the same line: the result
// is the exact integer sum_c q[c] * w[c]. Compiled with -mavx512vnni (CMakeLists.txt); reached only
// through kernels_for() when cpu_has_avx512_vnni().
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::avx512_vnni {
namespace {

constexpr int kMaxTokens = 4;      // rows of x per register block
constexpr int64_t kChunkRows = 64; // weight rows kept in L2 while every row of x passes over them

// Weight rows per register block: M x R sums + R weight sums + R lines within the 32 registers.
template <int M>
constexpr int rows_per_block() {
    return M == 1 ? 8 : 4;
}

__mmask64 tail_mask(int64_t count) { return count >= 64 ? ~__mmask64{0} : (__mmask64{1} << count) - 1; }

// Adds line c (64 codes, `mask` past k) of the R rows at w for the M rows of x.
template <int M, int R>
inline void step(const int8_t* w, int64_t k, const uint8_t* const* xr, int64_t c, __mmask64 mask, __m512i (&acc)[M][R],
                 __m512i (&wsum)[R]) {
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        wv[r] = _mm512_maskz_loadu_epi8(mask, w + r * k + c);
        wsum[r] = _mm512_dpbusd_epi32(wsum[r], ones, wv[r]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
        const __m512i xv = _mm512_load_si512(xr[i] + c);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbusd_epi32(acc[i][r], xv, wv[r]);
    }
}

// y[i0 + i, r0 + r] for i < M, r < R: each weight line is loaded once and used for the M rows of x.
// `next` (or nullptr): each line read from the R rows is matched by a prefetch into L2 of the same
// line of the next R rows, which carries the stream across the 4 KiB pages where the hardware
// prefetcher stops (without it this kernel waited on DRAM at about a quarter of the bandwidth).
template <int M, int R>
void block(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0, const int8_t* next) {
    const int64_t k = p.k;
    const int8_t* w = static_cast<const int8_t*>(p.w) + r0 * k;
    const uint8_t* xr[M];
    for (int i = 0; i < M; ++i) xr[i] = x.codes + (i0 + i) * x.stride;
    __m512i acc[M][R], wsum[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        wsum[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) acc[i][r] = _mm512_setzero_si512();
    }
    int64_t c = 0;
    for (; c + 64 <= k; c += 64) {
        if (next != nullptr)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(next + r * k + c), _MM_HINT_T1);
        step<M, R>(w, k, xr, c, ~__mmask64{0}, acc, wsum);
    }
    if (c < k) step<M, R>(w, k, xr, c, tail_mask(k - c), acc, wsum);  // past k: weights 0 (x padding is code 0)
    int32_t offset[R], dot[M][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        offset[r] = 128 * _mm512_reduce_add_epi32(wsum[r]);
        for (int i = 0; i < M; ++i) dot[i][r] = _mm512_reduce_add_epi32(acc[i][r]) - offset[r];
    }
    for (int r = 0; r < R; ++r) {
        const float w_scale = p.w_scale[r0 + r];
        for (int i = 0; i < M; ++i) p.y[(i0 + i) * p.n + r0 + r] = (x.scales[i0 + i] * w_scale) * static_cast<float>(dot[i][r]);
    }
}

// Rows [r_begin, r_end) for the M rows of x from i0: blocks of R rows, then single rows.
template <int M>
void rows_for_tokens(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r_begin, int64_t r_end) {
    constexpr int R = rows_per_block<M>();
    const int8_t* w = static_cast<const int8_t*>(p.w);
    int64_t r = r_begin;
    for (; r + R <= r_end; r += R) block<M, R>(p, x, i0, r, r + 2 * R <= r_end ? w + (r + R) * p.k : nullptr);
    for (; r < r_end; ++r) block<M, 1>(p, x, i0, r, nullptr);
}

void rows_of_x(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r_begin, int64_t r_end) {
    switch (std::min<int64_t>(kMaxTokens, p.m - i0)) {
        case 1: return rows_for_tokens<1>(p, x, i0, r_begin, r_end);
        case 2: return rows_for_tokens<2>(p, x, i0, r_begin, r_end);
        case 3: return rows_for_tokens<3>(p, x, i0, r_begin, r_end);
        default: return rows_for_tokens<4>(p, x, i0, r_begin, r_end);
    }
}

}  // namespace

void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    if (p.m <= kMaxTokens) return rows_of_x(p, x, 0, n_begin, n_end);  // decode: one pass over the rows
    for (int64_t chunk = n_begin; chunk < n_end; chunk += kChunkRows) {
        const int64_t chunk_end = std::min(n_end, chunk + kChunkRows);
        for (int64_t i0 = 0; i0 < p.m; i0 += kMaxTokens) rows_of_x(p, x, i0, chunk, chunk_end);
    }
}

}  // namespace hichat::cpu::avx512_vnni
