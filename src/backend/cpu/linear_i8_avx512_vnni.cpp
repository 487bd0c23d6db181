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

constexpr int kRows = 4;           // weight rows per register block
constexpr int kMaxTokens = 4;      // rows of x per register block: kMaxTokens * kRows int32 sums
constexpr int64_t kChunkRows = 64; // weight rows kept in L2 while every row of x passes over them

__mmask64 tail_mask(int64_t count) { return count >= 64 ? ~__mmask64{0} : (__mmask64{1} << count) - 1; }

// y[i0 + i, r0 + r] for i < M and r < rows (<= kRows): each weight line is loaded once and used for
// the M rows of x.
template <int M>
void block(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0, int rows) {
    const int8_t* w[kRows];
    for (int r = 0; r < kRows; ++r) {
        w[r] = static_cast<const int8_t*>(p.w) + (r0 + std::min(r, rows - 1)) * p.k;  // past `rows`: repeat, unused
    }
    const uint8_t* xr[M];
    for (int i = 0; i < M; ++i) xr[i] = x.codes + (i0 + i) * x.stride;
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i acc[M][kRows], wsum[kRows];
    for (int r = 0; r < kRows; ++r) {
        wsum[r] = _mm512_setzero_si512();
        for (int i = 0; i < M; ++i) acc[i][r] = _mm512_setzero_si512();
    }
    for (int64_t c = 0; c < p.k; c += 64) {
        const __mmask64 mask = tail_mask(p.k - c);  // past k: weights 0 (the x padding is code 0 too)
        __m512i wv[kRows];
#pragma GCC unroll 4
        for (int r = 0; r < kRows; ++r) {
            wv[r] = _mm512_maskz_loadu_epi8(mask, w[r] + c);
            wsum[r] = _mm512_dpbusd_epi32(wsum[r], ones, wv[r]);
        }
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
            const __m512i xv = _mm512_load_si512(xr[i] + c);
#pragma GCC unroll 4
            for (int r = 0; r < kRows; ++r) acc[i][r] = _mm512_dpbusd_epi32(acc[i][r], xv, wv[r]);
        }
    }
    for (int r = 0; r < rows; ++r) {
        const int32_t offset = 128 * _mm512_reduce_add_epi32(wsum[r]);
        const float w_scale = p.w_scale[r0 + r];
        for (int i = 0; i < M; ++i) {
            const int32_t dot = _mm512_reduce_add_epi32(acc[i][r]) - offset;
            p.y[(i0 + i) * p.n + r0 + r] = (x.scales[i0 + i] * w_scale) * static_cast<float>(dot);
        }
    }
}

void rows_of_x(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0, int rows) {
    switch (std::min<int64_t>(kMaxTokens, p.m - i0)) {
        case 1: return block<1>(p, x, i0, r0, rows);
        case 2: return block<2>(p, x, i0, r0, rows);
        case 3: return block<3>(p, x, i0, r0, rows);
        default: return block<4>(p, x, i0, r0, rows);
    }
}

}  // namespace

void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    for (int64_t chunk = n_begin; chunk < n_end; chunk += kChunkRows) {
        const int64_t chunk_end = std::min(n_end, chunk + kChunkRows);
        for (int64_t i0 = 0; i0 < p.m; i0 += kMaxTokens)
            for (int64_t r0 = chunk; r0 < chunk_end; r0 += kRows)
                rows_of_x(p, x, i0, r0, static_cast<int>(std::min<int64_t>(kRows, chunk_end - r0)));
    }
}

}  // namespace hichat::cpu::avx512_vnni
