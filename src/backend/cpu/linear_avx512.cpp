// linear() kernels for AVX-512 (F, BW, VL, DQ) + FMA. Compiled with those flags (CMakeLists.txt); reached
// only through kernels_for(SimdLevel::kAvx512).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/transpose_avx512.h"

namespace hichat::cpu::avx512 {
namespace {

// Loads 16 weights at w[idx..idx+16) as fp32; the masked form reads only the lanes set in `mask`
// and zeroes the others.
struct Bf16Loader {
    static constexpr int kElemBytes = 2;
    static constexpr int kStepsPerLine = 2;
    static __m512 load(const void* w, int64_t idx) {
        __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(w) + idx));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    static __m512 load(const void* w, int64_t idx, __mmask16 mask) {
        __m256i h = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(w) + idx);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
};

struct F16Loader {
    static constexpr int kElemBytes = 2;
    static constexpr int kStepsPerLine = 2;
    static __m512 load(const void* w, int64_t idx) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(w) + idx)));
    }
    static __m512 load(const void* w, int64_t idx, __mmask16 mask) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(w) + idx));
    }
};

struct F32Loader {
    static constexpr int kElemBytes = 4;
    static constexpr int kStepsPerLine = 1;
    static __m512 load(const void* w, int64_t idx) { return _mm512_loadu_ps(static_cast<const float*>(w) + idx); }
    static __m512 load(const void* w, int64_t idx, __mmask16 mask) {
        return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(w) + idx);
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

__mmask16 tail_mask(int64_t count) { return static_cast<__mmask16>((1u << count) - 1u); }  // count <= 16

// ---- GEMV: small m. Each weight row is streamed once and used for all M rows of x. ----

// x_packed[kk / 16][i][kk % 16] = x[i, kk] for i < M, zero-padded to whole 16-float groups: the M
// vectors of one k step lie in consecutive lines (rows of x at a 4 KiB multiple stride would all
// fall into one L1 set).
template <int M>
void pack_x_rows(const float* x, int64_t k, float* x_packed) {
    for (int64_t kk = 0; kk < k; kk += 16) {
        __mmask16 mask = tail_mask(std::min<int64_t>(16, k - kk));
        for (int i = 0; i < M; ++i)
            _mm512_storeu_ps(x_packed + (kk / 16 * M + i) * 16, _mm512_maskz_loadu_ps(mask, x + i * k + kk));
    }
}

// acc[i][r] += x_packed[i] . w[row0 + r, kk : kk + 16]   for i < M, r < R (one 16-float step of k).
template <class L, int M, int R>
inline __attribute__((always_inline)) void gemv_step(const LinearProblem& p, const float* xp, int64_t row0,
                                                     int64_t kk, __m512 (&acc)[M][R]) {
    __m512 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = L::load(p.w, (row0 + r) * p.k + kk);
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
        __m512 xv = _mm512_loadu_ps(xp + i * 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_fmadd_ps(xv, wv[r], acc[i][r]);
    }
}

// y[i, row0 + r] = x[i, :] . w[row0 + r, :]   for i < M, r < R; x packed by pack_x_rows.
// With `next` (the first of the R rows read after these, k apart; null for none), each cache line read
// from the R rows is matched by a prefetch into L2 of the same line of the next R rows: a 2048-wide
// bf16 row is exactly one 4 KiB page, where the hardware prefetcher stops, so without it every block
// of rows would start cold (+10-20% GB/s in a 2-thread GEMV test on the benchmark machine). The last
// block of a range prefetches the first rows of the thread's next range (linear.cpp's next_rows).
// A sweep on 2026-11-30 (cpu_ops_bench, 4 shuffled rounds, share of the read probe at m = 1) kept this:
// T0 was within noise (76.7-95.1% vs 79.3-93.9%), T2 likewise, two or three blocks ahead 73-92%, no
// software prefetch 68-86%, every other line 67-76%, only the first 2 or 8 lines of each row 70-83%,
// NTA 33-40%. Chunks of 1-16 per thread (linear.cpp) made no difference beyond the host's drift. Nor
// did whole-line bf16 loads split into even/odd halves by a shift and a mask (x de-interleaved to
// match) instead of vpmovzxwd per half line: faster in 6 of 12 paired cpu_ops_bench rounds, although a
// stand-alone emulation of the two had read 0-10% faster.
template <class L, int M, int R>
void gemv_block(const LinearProblem& p, const float* x_packed, float* y, int64_t row0, const char* next) {
    constexpr int kStepsPerLine = L::kStepsPerLine;  // 16-float steps of k per 64-byte line of weights
    const int64_t k = p.k;
    __m512 acc[M][R];
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_setzero_ps();
    const float* xp = x_packed;
    int64_t kk = 0;
    if (next != nullptr) {
        for (; kk + 16 * kStepsPerLine <= k; kk += 16 * kStepsPerLine) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) _mm_prefetch(next + (r * k + kk) * L::kElemBytes, _MM_HINT_T1);
#pragma GCC unroll 2
            for (int s = 0; s < kStepsPerLine; ++s, xp += M * 16) gemv_step<L, M, R>(p, xp, row0, kk + 16 * s, acc);
        }
    }
    for (; kk + 16 <= k; kk += 16, xp += M * 16) gemv_step<L, M, R>(p, xp, row0, kk, acc);
    if (kk < k) {
        __mmask16 mask = tail_mask(k - kk);
        __m512 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = L::load(p.w, (row0 + r) * k + kk, mask);
        for (int i = 0; i < M; ++i) {
            __m512 xv = _mm512_loadu_ps(xp + i * 16);
            for (int r = 0; r < R; ++r) acc[i][r] = _mm512_fmadd_ps(xv, wv[r], acc[i][r]);
        }
    }
    for (int i = 0; i < M; ++i)
        for (int r = 0; r < R; ++r) y[i * p.n + row0 + r] = _mm512_reduce_add_ps(acc[i][r]);
}

// Rows per block: enough independent accumulators (M x R <= 24), within the 32 vector registers. At
// M = 1 (batch-1 decode) 8 rows: decode measured ~4% faster than with 4 on the benchmark machine (12
// alternating runs each), 2 rows ~4% slower.
template <int M>
constexpr int gemv_rows_per_block() {
    return M == 1 ? 8 : M <= 6 ? 4 : 3;
}

// Weight rows stream whole (k passes would cut them into segments too short for the hardware
// prefetcher); the packed x rows then come from L1/L2.
template <class L, int M>
void gemv_rows(const LinearProblem& p, const float* x, float* y, int64_t n_begin, int64_t n_end, const void* next_rows,
               float* scratch) {
    static_assert(M <= kGemvMaxRowsPerPass);
    constexpr int R = gemv_rows_per_block<M>();
    pack_x_rows<M>(x, p.k, scratch);
    const char* w = static_cast<const char*>(p.w);
    int64_t row = n_begin;
    for (; row + R <= n_end; row += R) {
        const char* next = row + 2 * R <= n_end ? w + (row + R) * p.k * L::kElemBytes
                           : row + R == n_end  ? static_cast<const char*>(next_rows)
                                               : nullptr;
        gemv_block<L, M, R>(p, scratch, y, row, next);
    }
    for (; row < n_end; ++row) gemv_block<L, M, 1>(p, scratch, y, row, nullptr);
}

template <class L, int... Ms>
void gemv_dispatch(int64_t m, const LinearProblem& p, const float* x, float* y, int64_t n_begin,
                   int64_t n_end, const void* next_rows, float* scratch, std::integer_sequence<int, Ms...>) {
    // Calls gemv_rows<L, m>: a fold over the instantiated row counts 1..kGemvMaxRowsPerPass.
    (void)((m == Ms + 1 ? (gemv_rows<L, Ms + 1>(p, x, y, n_begin, n_end, next_rows, scratch), true) : false) || ...);
}

// ---- GEMM: large m. Weight panels of 32 rows x kGemmPanelDepth are converted to fp32 and transposed
// once into scratch ([depth][32]), then a 14 x 32 register-blocked micro-kernel sweeps all m rows. ----

constexpr int kPanelCols = 32;
constexpr int kTileRows = 14;

using avx512_detail::transpose16x16;

// panel[d][j] = w[row0 + j, k0 + d] as fp32 for j < num_rows (zero for num_rows <= j < 32), d < depth.
// Converts row by row into rows_f32 ([32][depth]) first: reading 32 weight rows side by side at a
// 4 KiB-multiple stride would thrash one L1 set; then transposes 16 x 16 blocks from there.
template <class L>
void pack_panel(const LinearProblem& p, int64_t row0, int num_rows, int64_t k0, int depth, float* rows_f32,
                float* panel) {
    const int depth_padded = (depth + 15) / 16 * 16;
    for (int j = 0; j < kPanelCols; ++j) {
        float* dst = rows_f32 + j * depth_padded;
        for (int d0 = 0; d0 < depth_padded; d0 += 16) {
            __m512 v = _mm512_setzero_ps();
            if (j < num_rows) {
                const int64_t idx = (row0 + j) * p.k + k0 + d0;
                v = d0 + 16 <= depth ? L::load(p.w, idx) : L::load(p.w, idx, tail_mask(depth - d0));
            }
            _mm512_store_ps(dst + d0, v);
        }
    }
    for (int d0 = 0; d0 < depth; d0 += 16) {
        const int num_d = std::min(16, depth - d0);
        for (int half = 0; half < 2; ++half) {
            __m512 r[16];
            for (int t = 0; t < 16; ++t) r[t] = _mm512_load_ps(rows_f32 + (half * 16 + t) * depth_padded + d0);
            transpose16x16(r);
            for (int t = 0; t < num_d; ++t) _mm512_store_ps(panel + (d0 + t) * kPanelCols + half * 16, r[t]);
        }
    }
}

// Starts loading w[row0 : row0 + num_rows, k0 : k0 + depth] into L2, while the current panel is being
// used: short row segments at a 4 KiB stride defeat the hardware prefetcher, so the packing would
// otherwise wait on memory.
void prefetch_panel(const LinearProblem& p, int64_t row0, int num_rows, int64_t k0, int depth) {
    const int64_t elem_bytes = dtype_size_bytes(p.w_dtype);
    for (int j = 0; j < num_rows; ++j) {
        const char* begin = static_cast<const char*>(p.w) + ((row0 + j) * p.k + k0) * elem_bytes;
        for (int64_t offset = 0; offset < depth * elem_bytes; offset += 64) _mm_prefetch(begin + offset, _MM_HINT_T1);
    }
}

// x_tile[d][r] = x[r, k0 + d] for r < num_rows, zero for num_rows <= r < kTileRows: 16 x 16 transposes
// of the rows (padded with zero rows), each stored as 16 runs of kTileRows floats.
void pack_x_tile(const float* x, int64_t ldx, int num_rows, int depth, float* x_tile) {
    static_assert(kTileRows <= 16);
    const __mmask16 row_lanes = tail_mask(kTileRows);
    for (int d0 = 0; d0 < depth; d0 += 16) {
        const int num_d = std::min(16, depth - d0);
        const __mmask16 mask = tail_mask(num_d);
        __m512 r[16];
        for (int t = 0; t < 16; ++t) r[t] = t < num_rows ? _mm512_maskz_loadu_ps(mask, x + t * ldx + d0) : _mm512_setzero_ps();
        transpose16x16(r);
        for (int t = 0; t < num_d; ++t) _mm512_mask_storeu_ps(x_tile + (d0 + t) * kTileRows, row_lanes, r[t]);
    }
}

// y[i, 0:num_cols] (+)= x_tile[0:depth, i] . panel[0:depth, 0:num_cols]   for i < MR.
template <int MR>
void micro_kernel(int depth, const float* x_tile, const float* panel, float* y, int64_t ldy,
                  int num_cols, bool accumulate) {
    if (accumulate) {  // the tile of y is read at the end: start bringing it into L2 now
        for (int i = 0; i < MR; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + 16), _MM_HINT_T1);
        }
    }
    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int d = 0; d < depth; ++d) {
        __m512 b0 = _mm512_load_ps(panel + d * kPanelCols);
        __m512 b1 = _mm512_load_ps(panel + d * kPanelCols + 16);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            __m512 a = _mm512_set1_ps(x_tile[d * kTileRows + i]);
            acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
        }
    }
    __mmask16 m0 = num_cols >= 16 ? __mmask16(0xFFFF) : tail_mask(num_cols);
    __mmask16 m1 = num_cols >= 32 ? __mmask16(0xFFFF) : num_cols > 16 ? tail_mask(num_cols - 16) : __mmask16(0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        float* row = y + i * ldy;
        if (accumulate) {
            acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, row));
            acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, row + 16));
        }
        _mm512_mask_storeu_ps(row, m0, acc[i][0]);
        _mm512_mask_storeu_ps(row + 16, m1, acc[i][1]);
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
    float* panel = scratch;                                               // [depth][kPanelCols]
    float* rows_f32 = scratch + kGemmMaxPanelCols * kGemmPanelDepth;      // [kPanelCols][depth]
    float* x_block = scratch + 2 * kGemmMaxPanelCols * kGemmPanelDepth;   // [num_tiles][depth][kTileRows]
    const int64_t num_tiles = (p.m + kTileRows - 1) / kTileRows;
    for (int64_t k0 = 0; k0 < p.k; k0 += kGemmPanelDepth) {
        const int depth = static_cast<int>(std::min<int64_t>(kGemmPanelDepth, p.k - k0));
        for (int64_t t = 0; t < num_tiles; ++t) {
            int num_rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - t * kTileRows));
            pack_x_tile(p.x + t * kTileRows * p.k + k0, p.k, num_rows, depth, x_block + t * depth * kTileRows);
        }
        for (int64_t col0 = n_begin; col0 < n_end; col0 += kPanelCols) {
            const int num_cols = static_cast<int>(std::min<int64_t>(kPanelCols, n_end - col0));
            pack_panel<L>(p, col0, num_cols, k0, depth, rows_f32, panel);
            const int64_t next_col0 = col0 + kPanelCols;
            if (next_col0 < n_end) {
                prefetch_panel(p, next_col0, static_cast<int>(std::min<int64_t>(kPanelCols, n_end - next_col0)), k0,
                               depth);
            }
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

void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch) {
    // Passes of equal size, each streaming the weights once for up to kGemvMaxRowsPerPass rows of x.
    const int64_t num_passes = (p.m + kGemvMaxRowsPerPass - 1) / kGemvMaxRowsPerPass;
    const int64_t rows_per_pass = (p.m + num_passes - 1) / num_passes;
    with_loader(p.w_dtype, [&](auto loader) {
        using L = decltype(loader);
        for (int64_t i0 = 0; i0 < p.m; i0 += rows_per_pass) {
            int64_t rows = std::min(rows_per_pass, p.m - i0);
            const bool last_pass = i0 + rows >= p.m;   // an earlier pass reads the range's first rows next
            const void* then = last_pass ? next_rows : static_cast<const char*>(p.w) + n_begin * p.k * L::kElemBytes;
            gemv_dispatch<L>(rows, p, p.x + i0 * p.k, p.y + i0 * p.n, n_begin, n_end, then, scratch,
                             std::make_integer_sequence<int, kGemvMaxRowsPerPass>{});
        }
    });
}

void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch) {
    with_loader(p.w_dtype, [&](auto loader) { gemm_typed<decltype(loader)>(p, n_begin, n_end, scratch); });
}

}  // namespace hichat::cpu::avx512
