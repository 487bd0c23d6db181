// linear_q4() for AVX-512 with AVX512_VNNI, on base/q4_layout.h's blocks of 512 columns: each 64-byte
// weight line gives two nibble planes (a mask; a shift and a mask), each the unsigned operand of one
// vpdpbusd against 64 activation codes (signed, laid out to match), so that int32 lane l of the 8
// products of a block is the exact sum of group l's 32 products u * q. One conversion and one fma by
// the 16 groups' scales (one cvtph) per block. The stored codes are u = w + z; z is taken back in the
// same lanes as z_g * group_sum_g (the activations' group sums, from quantize_row_q4x) before the scale.
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

// Weight rows per register block: M x R fp32 accumulators and as many int32 ones, with a line's two
// nibble planes, within the 32 registers.
template <int M>
constexpr int rows_per_block() {
    return M == 1 ? 8 : M == 2 ? 4 : 2;
}

// y[i0 + i, r0 + r] for i < M, r < R: each weight line is loaded and unpacked once for the M rows
// of x, whose codes are the signed operand straight from memory. Per block of 512 columns the 8
// products accumulate in int32, one group per lane, then one conversion and one multiply by the 16
// groups' scales. `next` (or nullptr): the rows after these, whose lines are prefetched into L2 as
// these are read (the hardware prefetcher stops at each 4 KiB page).
template <int M, int R>
void block(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0, const uint8_t* next) {
    const int64_t blocks = q4_blocks(p.k), groups = q4_groups(p.k), row_bytes = q4_row_bytes(p.k);
    const uint8_t* w = static_cast<const uint8_t*>(p.w) + r0 * row_bytes;
    const int64_t sums_stride = x.stride / kQ4Group;
    const uint8_t* xr[M];
    for (int i = 0; i < M; ++i) xr[i] = x.codes + (i0 + i) * x.stride;
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    __m512 acc[M][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) acc[i][r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        if (next != nullptr)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
                for (int line = 0; line < 4; ++line)
                    _mm_prefetch(reinterpret_cast<const char*>(next + r * row_bytes + b * kQ4BlockBytes + line * 64),
                                 _MM_HINT_T1);
        __m512i dot[M][R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int i = 0; i < M; ++i) dot[i][r] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int line = 0; line < 4; ++line) {
            __m512i lo[R], hi[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m512i bytes = _mm512_loadu_si512(w + r * row_bytes + b * kQ4BlockBytes + line * 64);
                lo[r] = _mm512_and_si512(bytes, nibble);
                hi[r] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
            }
#pragma GCC unroll 4
            for (int i = 0; i < M; ++i) {
                const uint8_t* xb = xr[i] + b * kQ4BlockElements + line * 128;
                const __m512i x_lo = _mm512_load_si512(xb), x_hi = _mm512_load_si512(xb + 64);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    dot[i][r] = _mm512_dpbusd_epi32(dot[i][r], lo[r], x_lo);
                    dot[i][r] = _mm512_dpbusd_epi32(dot[i][r], hi[r], x_hi);
                }
            }
        }
        // Per lane (group): (dot - z * group_sum) exactly (integers below 2^24), times the group's scale.
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int64_t g = (r0 + r) * groups + b * kQ4GroupsPerBlock;
            const __m512 s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.q4_scales + g)));
            const __m512 z = p.q4_zeros == nullptr
                                 ? _mm512_set1_ps(static_cast<float>(kQ4ZeroCode))
                                 : _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.q4_zeros + g))));
#pragma GCC unroll 4
            for (int i = 0; i < M; ++i) {
                const __m512 sums = _mm512_loadu_ps(x.group_sums + (i0 + i) * sums_stride + b * kQ4GroupsPerBlock);
                const __m512 term = _mm512_fnmadd_ps(z, sums, _mm512_cvtepi32_ps(dot[i][r]));
                acc[i][r] = _mm512_fmadd_ps(term, s, acc[i][r]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) p.y[(i0 + i) * p.n + r0 + r] = x.scales[i0 + i] * _mm512_reduce_add_ps(acc[i][r]);
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
