// linear_i8() for AVX2 (and AVX-512 CPUs without VNNI): the codes and the int8 weights widened to
// int16 and multiplied by vpmaddwd, which adds each two products into an int32 lane; exact (the
// maddubs route would saturate at 2 * 255 * 127). Compiled with -mavx2 (CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::avx2 {
namespace {

constexpr int kRows = 4;           // weight rows per register block
constexpr int kMaxTokens = 2;      // rows of x per register block (16 ymm registers)
constexpr int64_t kChunkRows = 64; // weight rows kept in L2 while every row of x passes over them

int32_t reduce_add(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

// 16 int8 weights from w[0:count) (zero past count) as int16.
__m256i load_weights(const int8_t* w, int64_t count) {
    if (count >= 16) return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    alignas(16) int8_t tmp[16] = {};
    std::memcpy(tmp, w, static_cast<size_t>(count));
    return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
}

template <int M>
void block(const LinearProblem& p, const Int8Rows& x, int64_t i0, int64_t r0, int rows) {
    const int8_t* w[kRows];
    for (int r = 0; r < kRows; ++r) {
        w[r] = static_cast<const int8_t*>(p.w) + (r0 + std::min(r, rows - 1)) * p.k;  // past `rows`: repeat, unused
    }
    const uint8_t* xr[M];
    for (int i = 0; i < M; ++i) xr[i] = x.codes + (i0 + i) * x.stride;
    const __m256i bias = _mm256_set1_epi16(128);
    __m256i acc[M][kRows];
    for (int i = 0; i < M; ++i)
        for (int r = 0; r < kRows; ++r) acc[i][r] = _mm256_setzero_si256();
    for (int64_t c = 0; c < p.k; c += 16) {
        __m256i wv[kRows];
        for (int r = 0; r < kRows; ++r) wv[r] = load_weights(w[r] + c, p.k - c);
        for (int i = 0; i < M; ++i) {
            const __m128i bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(xr[i] + c));  // stride: 64s
            const __m256i xv = _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), bias);
            for (int r = 0; r < kRows; ++r) acc[i][r] = _mm256_add_epi32(acc[i][r], _mm256_madd_epi16(xv, wv[r]));
        }
    }
    for (int r = 0; r < rows; ++r) {
        const float w_scale = p.w_scale[r0 + r];
        for (int i = 0; i < M; ++i) {
            p.y[(i0 + i) * p.n + r0 + r] = (x.scales[i0 + i] * w_scale) * static_cast<float>(reduce_add(acc[i][r]));
        }
    }
}

}  // namespace

void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end) {
    for (int64_t chunk = n_begin; chunk < n_end; chunk += kChunkRows) {
        const int64_t chunk_end = std::min(n_end, chunk + kChunkRows);
        for (int64_t i0 = 0; i0 < p.m; i0 += kMaxTokens)
            for (int64_t r0 = chunk; r0 < chunk_end; r0 += kRows) {
                const int rows = static_cast<int>(std::min<int64_t>(kRows, chunk_end - r0));
                if (p.m - i0 >= 2) {
                    block<2>(p, x, i0, r0, rows);
                } else {
                    block<1>(p, x, i0, r0, rows);
                }
            }
    }
}

}  // namespace hichat::cpu::avx2
