// linear_q4() for AVX2 (and AVX-512 CPUs without VNNI), on base/q4_layout.h's blocks of 512 columns.
// Each 32-byte half of a weight line holds 4 elements of 8 groups per nibble plane (low: one, high:
// the next 4 of each group); vpmaddubsw multiplies the nibbles (unsigned) by the matching 32 signed
// activation codes and adds pairs into int16 (at most 2 * 15 * 127: nothing saturates), vpmaddwd by
// ones adds those pairs into int32 lanes: lane l of the 8 products of a block is group l's exact
// integer sum (groups 0-7 from the first halves, 8-15 from the second), converted once per block and
// multiplied by the groups' scales. The stored codes are w + z; z is taken back as sum_g scale_g *
// z_g * group_sum_g, summed beside the products with the scales already loaded (the same order as a
// separate pass over the groups, so the same bits). Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/kernel_table.h"
#include "base/dtype.h"
#include "base/q4_layout.h"

namespace hichat::cpu::avx2 {
namespace {

constexpr int kMaxTokens = 2;       // rows of x per register block (16 ymm registers)
constexpr int64_t kChunkRows = 64;  // weight rows kept in L2 while every row of x passes over them

template <int M>
constexpr int rows_per_block() {
    return M == 1 ? 2 : 1;
}

float reduce_add(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The int32 lanes of the products u * q of 4 bytes each, added to `sum`.
inline __m256i add_products(__m256i sum, __m256i nibbles, const uint8_t* x) {
    const __m256i pairs = _mm256_maddubs_epi16(nibbles, _mm256_load_si256(reinterpret_cast<const __m256i*>(x)));
    return _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

template <int M, int R>
void block(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0) {
    const int64_t blocks = q4_blocks(p.k), groups = q4_groups(p.k), row_bytes = q4_row_bytes(p.k);
    const uint8_t* w = static_cast<const uint8_t*>(p.w) + r0 * row_bytes;
    const uint16_t* scales = p.q4_scales + r0 * groups;
    const uint8_t* zeros = p.q4_zeros != nullptr ? p.q4_zeros + r0 * groups : nullptr;
    const uint8_t* xr[M];
    const float* sums[M];   // the activations' group sums
    for (int i = 0; i < M; ++i) {
        xr[i] = x.codes + (i0 + i) * x.stride;
        sums[i] = x.group_sums + (i0 + i) * (x.stride / kQ4Group);
    }
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    __m256 acc[M][R], zero_acc[M][R];
    for (int i = 0; i < M; ++i)
        for (int r = 0; r < R; ++r) acc[i][r] = zero_acc[i][r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
        for (int half = 0; half < 2; ++half) {  // groups 8 half .. 8 half + 7 of the block
            __m256i dot[M][R];
            for (int i = 0; i < M; ++i)
                for (int r = 0; r < R; ++r) dot[i][r] = _mm256_setzero_si256();
            for (int line = 0; line < 4; ++line) {
                for (int r = 0; r < R; ++r) {
                    const __m256i bytes = _mm256_loadu_si256(
                        reinterpret_cast<const __m256i*>(w + r * row_bytes + b * kQ4BlockBytes + line * 64 + 32 * half));
                    const __m256i lo = _mm256_and_si256(bytes, nibble);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
                    for (int i = 0; i < M; ++i) {
                        const uint8_t* xb = xr[i] + b * kQ4BlockElements + line * 128 + 32 * half;
                        dot[i][r] = add_products(add_products(dot[i][r], lo, xb), hi, xb + 64);
                    }
                }
            }
            const int64_t g = b * kQ4GroupsPerBlock + 8 * half;
            for (int r = 0; r < R; ++r) {
                const __m256 s = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + r * groups + g)));
                const __m256 zs = zeros == nullptr ? s : _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
                                                                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(
                                                                             zeros + r * groups + g)))));
                for (int i = 0; i < M; ++i) {
                    acc[i][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[i][r]), s, acc[i][r]);
                    zero_acc[i][r] = _mm256_fmadd_ps(zs, _mm256_loadu_ps(sums[i] + g), zero_acc[i][r]);
                }
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int i = 0; i < M; ++i) {
            float zero = reduce_add(zero_acc[i][r]);
            if (zeros == nullptr) zero *= kQ4ZeroCode;
            p.y[(i0 + i) * p.n + r0 + r] = x.scales[i0 + i] * (reduce_add(acc[i][r]) - zero);
        }
    }
}

template <int M>
void rows_for_tokens(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r_begin, int64_t r_end) {
    constexpr int R = rows_per_block<M>();
    int64_t r = r_begin;
    for (; r + R <= r_end; r += R) block<M, R>(p, x, i0, r);
    for (; r < r_end; ++r) block<M, 1>(p, x, i0, r);
}

}  // namespace

void linear_q4(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    for (int64_t chunk = n_begin; chunk < n_end; chunk += kChunkRows) {
        const int64_t chunk_end = std::min(n_end, chunk + kChunkRows);
        for (int64_t i0 = 0; i0 < p.m; i0 += kMaxTokens) {
            if (p.m - i0 >= 2) {
                rows_for_tokens<2>(p, x, i0, chunk, chunk_end);
            } else {
                rows_for_tokens<1>(p, x, i0, chunk, chunk_end);
            }
        }
    }
}

}  // namespace hichat::cpu::avx2
