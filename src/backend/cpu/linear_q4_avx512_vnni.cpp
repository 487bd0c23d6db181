// linear_q4() for AVX-512 with AVX512_VNNI. One 64-byte weight line holds 128 elements as nibbles
// (base/q4_layout.h): a mask gives the first 64 and a shift and mask the next 64, each the unsigned
// operand of one vpdpbusd against 64 activation codes made signed again (bytes ^ 0x80), so each int32
// lane is the exact sum of four products u * q. Lanes 0-7 and 8-15 of each product are two groups of
// 32: converted to fp32 and multiplied by their group's scale (four f16 scales per line, widened and
// spread over the lanes by vpermps). The stored codes are u = w + z; z is taken back once per row as
// sum_g scale_g * z_g * group_sum_g (the activations' group sums, from quantize_row_int8).
// Compiled with -mavx512vnni (CMakeLists.txt); reached only through kernels_for() when
// cpu_has_avx512_vnni().
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/kernel_table.h"
#include "base/q4_layout.h"

namespace hichat::cpu::avx512_vnni {
namespace {

constexpr int kMaxTokens = 4;       // rows of x per register block
constexpr int64_t kChunkRows = 64;  // weight rows kept in L2 while every row of x passes over them

// Weight rows per register block: M x R accumulators, 2 M activation halves and the line's
// temporaries within the 32 registers.
template <int M>
constexpr int rows_per_block() {
    return M == 1 ? 8 : M == 2 ? 4 : 2;
}

// The zero points' share of a row: sum_g scale[g] * zero[g] * sums[g] over its `groups` groups,
// zero[g] = zeros[g], or 8 for all when zeros is null.
inline float zero_term(const uint16_t* scale, const uint8_t* zeros, const float* sums, int64_t groups) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; g += 16) {
        const __mmask16 mask = static_cast<__mmask16>(groups - g >= 16 ? 0xffffu : (1u << (groups - g)) - 1);
        __m512 s = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, scale + g));
        if (zeros != nullptr) s = _mm512_mul_ps(s, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, zeros + g))));
        acc = _mm512_fmadd_ps(s, _mm512_maskz_loadu_ps(mask, sums + g), acc);
    }
    return (zeros != nullptr ? 1.0f : static_cast<float>(kQ4ZeroCode)) * _mm512_reduce_add_ps(acc);
}

// y[i0 + i, r0 + r] for i < M, r < R: each weight line is loaded and unpacked once for the M rows
// of x. `next` (or nullptr): the rows after these, whose lines are prefetched into L2 as these are
// read (the hardware prefetcher stops at each 4 KiB page).
template <int M, int R>
void block(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0, const uint8_t* next) {
    const int64_t lines = q4_lines(p.k), groups = q4_groups(p.k), row_bytes = q4_row_bytes(p.k);
    const uint8_t* w = static_cast<const uint8_t*>(p.w) + r0 * row_bytes;
    const uint16_t* scales = p.q4_scales + r0 * groups;
    const uint8_t* xr[M];
    for (int i = 0; i < M; ++i) xr[i] = x.codes + (i0 + i) * x.stride;
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
    const __m512i first_two = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i last_two = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
    __m512 acc[M][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) acc[i][r] = _mm512_setzero_ps();
    for (int64_t line = 0; line < lines; ++line) {
        if (next != nullptr)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(next + r * row_bytes + line * 64), _MM_HINT_T1);
        __m512i lo_x[M], hi_x[M];
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
            lo_x[i] = _mm512_xor_si512(_mm512_load_si512(xr[i] + line * 128), sign);
            hi_x[i] = _mm512_xor_si512(_mm512_load_si512(xr[i] + line * 128 + 64), sign);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512i bytes = _mm512_loadu_si512(w + r * row_bytes + line * 64);
            const __m512i lo = _mm512_and_si512(bytes, nibble);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
            const __m128i four = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + r * groups + line * 4));
            const __m512 s = _mm512_castps128_ps512(_mm_cvtph_ps(four));
            const __m512 s_lo = _mm512_permutexvar_ps(first_two, s);
            const __m512 s_hi = _mm512_permutexvar_ps(last_two, s);
#pragma GCC unroll 4
            for (int i = 0; i < M; ++i) {
                const __m512i d_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, lo_x[i]);
                const __m512i d_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, hi_x[i]);
                acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d_lo), s_lo, acc[i][r]);
                acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d_hi), s_hi, acc[i][r]);
            }
        }
    }
    const int64_t sums_stride = x.stride / kQ4Group;
    for (int r = 0; r < R; ++r) {
        for (int i = 0; i < M; ++i) {
            const uint8_t* zeros = p.q4_zeros != nullptr ? p.q4_zeros + (r0 + r) * groups : nullptr;
            const float zero = zero_term(scales + r * groups, zeros, x.group_sums + (i0 + i) * sums_stride, groups);
            p.y[(i0 + i) * p.n + r0 + r] = x.scales[i0 + i] * (_mm512_reduce_add_ps(acc[i][r]) - zero);
        }
    }
}

// Rows [r_begin, r_end) for the M rows of x from i0: blocks of R rows, then single rows.
template <int M>
void rows_for_tokens(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r_begin, int64_t r_end) {
    constexpr int R = rows_per_block<M>();
    const auto* w = static_cast<const uint8_t*>(p.w);
    const int64_t row_bytes = q4_row_bytes(p.k);
    int64_t r = r_begin;
    for (; r + R <= r_end; r += R) block<M, R>(p, x, i0, r, r + 2 * R <= r_end ? w + (r + R) * row_bytes : nullptr);
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

void linear_q4(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    if (p.m <= kMaxTokens) return rows_of_x(p, x, 0, n_begin, n_end);  // decode: one pass over the rows
    for (int64_t chunk = n_begin; chunk < n_end; chunk += kChunkRows) {
        const int64_t chunk_end = std::min(n_end, chunk + kChunkRows);
        for (int64_t i0 = 0; i0 < p.m; i0 += kMaxTokens) rows_of_x(p, x, i0, chunk, chunk_end);
    }
}

}  // namespace hichat::cpu::avx512_vnni
