// linear() kernels for AVX2 + FMA + F16C. Compiled with those flags (CMakeLists.txt); reached only
// through kernels_for(SimdLevel::kAvx2).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::avx2 {
namespace {

// Loads 8 weights at w[idx..idx+8) as fp32; the partial form reads `count` (< 8) and zeroes the rest.
struct Bf16Loader {
    static __m256 convert(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
    static __m256 load(const void* w, int64_t idx) {
        return convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + idx)));
    }
    static __m256 load(const void* w, int64_t idx, int count) {
        uint16_t tmp[8] = {};
        std::memcpy(tmp, static_cast<const uint16_t*>(w) + idx, static_cast<size_t>(count) * 2);
        return convert(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp)));
    }
};

struct F16Loader {
    static __m256 load(const void* w, int64_t idx) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + idx)));
    }
    static __m256 load(const void* w, int64_t idx, int count) {
        uint16_t tmp[8] = {};
        std::memcpy(tmp, static_cast<const uint16_t*>(w) + idx, static_cast<size_t>(count) * 2);
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp)));
    }
};

struct F32Loader {
    static __m256 load(const void* w, int64_t idx) { return _mm256_loadu_ps(static_cast<const float*>(w) + idx); }
    static __m256 load(const void* w, int64_t idx, int count) {
        float tmp[8] = {};
        std::memcpy(tmp, static_cast<const float*>(w) + idx, static_cast<size_t>(count) * 4);
        return _mm256_loadu_ps(tmp);
    }
};

template <class Fn>
void with_loader(DType dtype, Fn&& fn) {
    switch (dtype) {
        case DType::kBF16: return fn(Bf16Loader{});
        case DType::kF16: return fn(F16Loader{});
        case DType::kF32: return fn(F32Loader{});
        case DType::kF8E4M3:  // refused by cpu::linear
        case DType::kI8:      // linear_i8
        case DType::kQ4:      // linear_q4
        case DType::kI32:
        case DType::kI64: break;  // repacked on load
    }
}

__m256 load_floats(const float* x, int count) {
    float tmp[8] = {};
    std::memcpy(tmp, x, static_cast<size_t>(count) * 4);
    return _mm256_loadu_ps(tmp);
}

float hsum(__m256 v) {
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

// ---- GEMV: small m. Each weight row is streamed once and used for all M rows of x. ----

// x_packed[kk / 8][i][kk % 8] = x[i, kk] for i < M, zero-padded to whole 8-float groups: the M
// vectors of one k step lie in consecutive lines (rows of x at a 4 KiB multiple stride would all
// fall into one L1 set).
template <int M>
void pack_x_rows(const float* x, int64_t k, float* x_packed) {
    for (int64_t kk = 0; kk < k; kk += 8) {
        const int count = static_cast<int>(std::min<int64_t>(8, k - kk));
        for (int i = 0; i < M; ++i) {
            __m256 v = count == 8 ? _mm256_loadu_ps(x + i * k + kk) : load_floats(x + i * k + kk, count);
            _mm256_storeu_ps(x_packed + (kk / 8 * M + i) * 8, v);
        }
    }
}

// y[i, row0 + r] = x[i, :] . w[row0 + r, :]   for i < M, r < R; x packed by pack_x_rows.
template <class L, int M, int R>
void gemv_block(const LinearProblem& p, const float* x_packed, float* y, int64_t row0) {
    const int64_t k = p.k;
    __m256 acc[M][R];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[i][r] = _mm256_setzero_ps();
    const float* xp = x_packed;
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8, xp += M * 8) {
        __m256 wv[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) wv[r] = L::load(p.w, (row0 + r) * k + kk);
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) {
            __m256 xv = _mm256_loadu_ps(xp + i * 8);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) acc[i][r] = _mm256_fmadd_ps(xv, wv[r], acc[i][r]);
        }
    }
    if (kk < k) {
        const int count = static_cast<int>(k - kk);
        __m256 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = L::load(p.w, (row0 + r) * k + kk, count);
        for (int i = 0; i < M; ++i) {
            __m256 xv = _mm256_loadu_ps(xp + i * 8);
            for (int r = 0; r < R; ++r) acc[i][r] = _mm256_fmadd_ps(xv, wv[r], acc[i][r]);
        }
    }
    for (int i = 0; i < M; ++i)
        for (int r = 0; r < R; ++r) y[i * p.n + row0 + r] = hsum(acc[i][r]);
}

// Rows per block: enough independent accumulators (M x R <= 12), within the 16 vector registers.
template <int M>
constexpr int gemv_rows_per_block() {
    return M <= 2 ? 4 : (M <= 4 ? 3 : (M <= 6 ? 2 : 1));
}

// Weight rows stream whole (k passes would cut them into segments too short for the hardware
// prefetcher); the packed x rows then come from L1/L2.
template <class L, int M>
void gemv_rows(const LinearProblem& p, const float* x, float* y, int64_t n_begin, int64_t n_end, float* scratch) {
    static_assert(M <= kGemvMaxRowsPerPass);
    constexpr int R = gemv_rows_per_block<M>();
    pack_x_rows<M>(x, p.k, scratch);
    int64_t row = n_begin;
    for (; row + R <= n_end; row += R) gemv_block<L, M, R>(p, scratch, y, row);
    for (; row < n_end; ++row) gemv_block<L, M, 1>(p, scratch, y, row);
}

template <class L, int... Ms>
void gemv_dispatch(int64_t m, const LinearProblem& p, const float* x, float* y, int64_t n_begin,
                   int64_t n_end, float* scratch, std::integer_sequence<int, Ms...>) {
    (void)((m == Ms + 1 ? (gemv_rows<L, Ms + 1>(p, x, y, n_begin, n_end, scratch), true) : false) || ...);
}

// ---- GEMM: large m. Weight panels of 16 rows x kGemmPanelDepth are converted to fp32 and transposed
// once into scratch ([depth][16]), then a 6 x 16 register-blocked micro-kernel sweeps all m rows. ----

constexpr int kPanelCols = 16;
constexpr int kTileRows = 6;

void transpose8x8(__m256 r[8]) {
    __m256 t[8];
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m256 s[8];
    for (int g = 0; g < 2; ++g) {
        s[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        s[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        s[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        s[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(s[c], s[c + 4], 0x20);
        r[c + 4] = _mm256_permute2f128_ps(s[c], s[c + 4], 0x31);
    }
}

// panel[d][j] = w[row0 + j, k0 + d] as fp32 for j < num_rows (zero for num_rows <= j < 16), d < depth.
template <class L>
void pack_panel(const LinearProblem& p, int64_t row0, int num_rows, int64_t k0, int depth, float* panel) {
    for (int d0 = 0; d0 < depth; d0 += 8) {
        int num_d = std::min(8, depth - d0);
        for (int half = 0; half < 2; ++half) {
            __m256 r[8];
            for (int t = 0; t < 8; ++t) {
                int j = half * 8 + t;
                int64_t idx = (row0 + j) * p.k + k0 + d0;
                if (j >= num_rows) r[t] = _mm256_setzero_ps();
                else if (num_d == 8) r[t] = L::load(p.w, idx);
                else r[t] = L::load(p.w, idx, num_d);
            }
            transpose8x8(r);
            for (int t = 0; t < num_d; ++t) _mm256_store_ps(panel + (d0 + t) * kPanelCols + half * 8, r[t]);
        }
    }
}

// x_tile[d][r] = x[r, k0 + d] for r < num_rows, zero for num_rows <= r < kTileRows.
void pack_x_tile(const float* x, int64_t ldx, int num_rows, int depth, float* x_tile) {
    for (int d = 0; d < depth; ++d) {
        float* dst = x_tile + d * kTileRows;
        for (int r = 0; r < num_rows; ++r) dst[r] = x[r * ldx + d];
        for (int r = num_rows; r < kTileRows; ++r) dst[r] = 0.0f;
    }
}

// y[i, 0:num_cols] (+)= x_tile[0:depth, i] . panel[0:depth, 0:num_cols]   for i < MR.
template <int MR>
void micro_kernel(int depth, const float* x_tile, const float* panel, float* y, int64_t ldy,
                  int num_cols, bool accumulate) {
    __m256 acc[MR][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int d = 0; d < depth; ++d) {
        __m256 b0 = _mm256_load_ps(panel + d * kPanelCols);
        __m256 b1 = _mm256_load_ps(panel + d * kPanelCols + 8);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            __m256 a = _mm256_broadcast_ss(x_tile + d * kTileRows + i);
            acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
        }
    }
    for (int i = 0; i < MR; ++i) {
        float* row = y + i * ldy;
        if (num_cols == kPanelCols) {
            if (accumulate) {
                acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(row));
                acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(row + 8));
            }
            _mm256_storeu_ps(row, acc[i][0]);
            _mm256_storeu_ps(row + 8, acc[i][1]);
        } else {
            alignas(32) float tmp[kPanelCols];
            _mm256_store_ps(tmp, acc[i][0]);
            _mm256_store_ps(tmp + 8, acc[i][1]);
            for (int j = 0; j < num_cols; ++j) row[j] = accumulate ? row[j] + tmp[j] : tmp[j];
        }
    }
}

template <int... Rs>
void micro_kernel_dispatch(int num_rows, int depth, const float* x_tile, const float* panel, float* y,
                           int64_t ldy, int num_cols, bool accumulate, std::integer_sequence<int, Rs...>) {
    (void)((num_rows == Rs + 1
                ? (micro_kernel<Rs + 1>(depth, x_tile, panel, y, ldy, num_cols, accumulate), true)
                : false) ||
           ...);
}

template <class L>
void gemm_typed(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch) {
    float* panel = scratch;                                      // [depth][kPanelCols]
    float* x_block = scratch + 2 * kGemmMaxPanelCols * kGemmPanelDepth;  // [num_tiles][depth][kTileRows]
    const int64_t num_tiles = (p.m + kTileRows - 1) / kTileRows;
    for (int64_t k0 = 0; k0 < p.k; k0 += kGemmPanelDepth) {
        const int depth = static_cast<int>(std::min<int64_t>(kGemmPanelDepth, p.k - k0));
        for (int64_t t = 0; t < num_tiles; ++t) {
            int num_rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - t * kTileRows));
            pack_x_tile(p.x + t * kTileRows * p.k + k0, p.k, num_rows, depth, x_block + t * depth * kTileRows);
        }
        for (int64_t col0 = n_begin; col0 < n_end; col0 += kPanelCols) {
            const int num_cols = static_cast<int>(std::min<int64_t>(kPanelCols, n_end - col0));
            pack_panel<L>(p, col0, num_cols, k0, depth, panel);
            for (int64_t t = 0; t < num_tiles; ++t) {
                int num_rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - t * kTileRows));
                micro_kernel_dispatch(num_rows, depth, x_block + t * depth * kTileRows, panel,
                                      p.y + t * kTileRows * p.n + col0, p.n, num_cols, k0 > 0,
                                      std::make_integer_sequence<int, kTileRows>{});
            }
        }
    }
}

}  // namespace

void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* /*next_rows*/, float* scratch) {
    // Passes of equal size, each streaming the weights once for up to kGemvMaxRowsPerPass rows of x.
    const int64_t num_passes = (p.m + kGemvMaxRowsPerPass - 1) / kGemvMaxRowsPerPass;
    const int64_t rows_per_pass = (p.m + num_passes - 1) / num_passes;
    with_loader(p.w_dtype, [&](auto loader) {
        using L = decltype(loader);
        for (int64_t i0 = 0; i0 < p.m; i0 += rows_per_pass) {
            int64_t rows = std::min(rows_per_pass, p.m - i0);
            gemv_dispatch<L>(rows, p, p.x + i0 * p.k, p.y + i0 * p.n, n_begin, n_end, scratch,
                             std::make_integer_sequence<int, kGemvMaxRowsPerPass>{});
        }
    });
}

void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch) {
    with_loader(p.w_dtype, [&](auto loader) { gemm_typed<decltype(loader)>(p, n_begin, n_end, scratch); });
}

}  // namespace hichat::cpu::avx2
