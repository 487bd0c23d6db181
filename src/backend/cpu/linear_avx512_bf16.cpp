// linear() kernels for AVX-512 with AVX512_BF16: bf16 weights are multiplied as they are stored by
// vdpbf16ps (two bf16 products added into each fp32 lane: 32 weights of a 64-byte line per
// instruction, no conversion), against fp32 activations rounded to bf16 terms: x = hi + lo with hi =
// bf16(x) and lo = bf16(x - hi), so the activations keep 16 of fp32's 24 bits (|x - hi - lo| <=
// 2^-16 |x|) and each product of a term and a weight is exact in fp32; the sums are fp32. f16 and f32
// weights take the AVX-512 kernels. Compiled with -mavx512bf16 (CMakeLists.txt); reached only through
// kernels_for(SimdLevel::kAvx512Bf16).
//
// kGemvTerms / kGemmTerms: 2 (hi + lo) for both. One term (hi only) halves the GEMM's instructions,
// but its error (2^-9 of each activation) moved the golden logits by 5.8e-3 (qwen3) to 1.29e-2
// (mistral) against 8.6e-6..1.97e-5 with two terms, over the 1e-3 the transformers goldens allow
// (measured 2026-12-04 with kGemmTerms = 1, executor_tests GoldenTest; 1B prefill of 128 tokens on 2
// threads went 85 -> 138-141 tok/s). The GEMV reads memory at the same speed with one term or two.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/transpose_avx512.h"

namespace hichat::cpu::avx512_bf16 {
namespace {

using avx512_detail::transpose16x16;

constexpr int kGemvTerms = 2;
constexpr int kGemmTerms = 2;

inline __m512bh as_bh(__m512i v) { return (__m512bh)v; }
inline __m512bh as_bh(__m512 v) { return (__m512bh)v; }

__mmask16 mask16(int64_t count) { return static_cast<__mmask16>(count >= 16 ? 0xFFFFu : (1u << count) - 1u); }
__mmask32 mask32(int64_t count) { return count >= 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << count) - 1u); }

// The bf16 terms of 32 floats x[0:32) (zero past `count`): hi = bf16(x), lo = bf16(x - hi), each
// 32 bf16 in order (lane j = pair (x[2j], x[2j+1])).
inline void split_terms(const float* x, int64_t count, __m512i& hi, __m512i& lo) {
    const __m512 a = _mm512_maskz_loadu_ps(mask16(count), x);
    const __m512 b = _mm512_maskz_loadu_ps(mask16(count - 16 > 0 ? count - 16 : 0), x + 16);
    const __m256i ha = (__m256i)_mm512_cvtneps_pbh(a), hb = (__m256i)_mm512_cvtneps_pbh(b);
    const __m512 ra = _mm512_sub_ps(a, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(ha), 16)));
    const __m512 rb = _mm512_sub_ps(b, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hb), 16)));
    hi = _mm512_inserti64x4(_mm512_castsi256_si512(ha), hb, 1);
    lo = (__m512i)_mm512_cvtne2ps_pbh(rb, ra);
}

// ---- GEMV: small m. Each weight row is streamed once and used for all M rows of x. ----

// x_packed[step][i][term] = 32 bf16 of row i's terms at k [32 step, 32 step + 32), zero-padded: the
// lines one weight line meets lie together.
template <int M>
void pack_x_rows(const float* x, int64_t k, __m512i* x_packed) {
    for (int64_t kk = 0, step = 0; kk < k; kk += 32, ++step)
        for (int i = 0; i < M; ++i) {
            __m512i hi, lo;
            split_terms(x + i * k + kk, k - kk, hi, lo);
            _mm512_store_si512(x_packed + (step * M + i) * kGemvTerms, hi);
            if constexpr (kGemvTerms == 2) _mm512_store_si512(x_packed + (step * M + i) * kGemvTerms + 1, lo);
        }
}

template <int M, int R>
inline __attribute__((always_inline)) void gemv_step(const __m512i (&wv)[R], const __m512i* xp, __m512 (&acc)[M][R]) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
#pragma GCC unroll 2
        for (int term = 0; term < kGemvTerms; ++term) {
            const __m512bh xv = as_bh(_mm512_load_si512(xp + i * kGemvTerms + term));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], xv, as_bh(wv[r]));
        }
    }
}

// y[i, row0 + r] = x[i, :] . w[row0 + r, :]   for i < M, r < R. `next` as in the AVX-512 GEMV: each
// line read from the R rows is matched by a prefetch into L2 of the same line of the next R rows (a
// 4 KiB row is a page, where the hardware prefetcher stops).
template <int M, int R>
void gemv_block(const LinearProblem& p, const __m512i* x_packed, float* y, int64_t row0, const char* next) {
    const int64_t k = p.k;
    const uint16_t* w = static_cast<const uint16_t*>(p.w);
    __m512 acc[M][R];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[i][r] = _mm512_setzero_ps();
    const __m512i* xp = x_packed;
    int64_t kk = 0;
    for (; kk + 32 <= k; kk += 32, xp += M * kGemvTerms) {
        __m512i wv[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_si512(w + (row0 + r) * k + kk);
        if (next != nullptr)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) _mm_prefetch(next + (r * k + kk) * 2, _MM_HINT_T1);
        gemv_step<M, R>(wv, xp, acc);
    }
    if (kk < k) {
        __m512i wv[R];
        for (int r = 0; r < R; ++r) wv[r] = _mm512_maskz_loadu_epi16(mask32(k - kk), w + (row0 + r) * k + kk);
        gemv_step<M, R>(wv, xp, acc);
    }
    for (int i = 0; i < M; ++i)
        for (int r = 0; r < R; ++r) y[i * p.n + row0 + r] = _mm512_reduce_add_ps(acc[i][r]);
}

// Rows per block: independent accumulators within the 32 vector registers (M x R + R + 1 <= 31).
template <int M>
constexpr int gemv_rows_per_block() {
    return M == 1 ? 8 : M <= 6 ? 4 : 3;
}

template <int M>
void gemv_rows(const LinearProblem& p, const float* x, float* y, int64_t n_begin, int64_t n_end, const void* next_rows,
               float* scratch) {
    static_assert(M <= kGemvMaxRowsPerPass);
    constexpr int R = gemv_rows_per_block<M>();
    __m512i* x_packed = reinterpret_cast<__m512i*>(scratch);
    pack_x_rows<M>(x, p.k, x_packed);
    const char* w = static_cast<const char*>(p.w);
    int64_t row = n_begin;
    for (; row + R <= n_end; row += R) {
        const char* next = row + 2 * R <= n_end ? w + (row + R) * p.k * 2
                           : row + R == n_end  ? static_cast<const char*>(next_rows)
                                               : nullptr;
        gemv_block<M, R>(p, x_packed, y, row, next);
    }
    for (; row < n_end; ++row) gemv_block<M, 1>(p, x_packed, y, row, nullptr);
}

template <int... Ms>
void gemv_dispatch(int64_t m, const LinearProblem& p, const float* x, float* y, int64_t n_begin, int64_t n_end,
                   const void* next_rows, float* scratch, std::integer_sequence<int, Ms...>) {
    (void)((m == Ms + 1 ? (gemv_rows<Ms + 1>(p, x, y, n_begin, n_end, next_rows, scratch), true) : false) || ...);
}

// ---- GEMM: large m. Panels of 32 weight rows x kGemmPanelDepth are transposed into bf16 pairs
// ([depth / 2][32] 32-bit lanes, no conversion), the x block into broadcastable pairs of each term,
// and a 14 x 32 micro-kernel of vdpbf16ps sweeps all m rows. ----

constexpr int kPanelCols = 32;
constexpr int kTileRows = 14;
constexpr int kPanelPairs = kGemmPanelDepth / 2;

// panel[d2][j] = the pair w[row0 + j, k0 + 2 d2 : k0 + 2 d2 + 2] for j < num_rows (zero for rows past
// num_rows and elements past depth), d2 < ceil(depth / 2) rounded up to 16.
void pack_panel(const LinearProblem& p, int64_t row0, int num_rows, int64_t k0, int depth, uint32_t* panel) {
    const uint16_t* w = static_cast<const uint16_t*>(p.w);
    for (int e0 = 0; e0 < depth; e0 += 32) {   // 16 pairs of each of 16 rows per transpose
        const __mmask32 mask = mask32(depth - e0);
        for (int half = 0; half < 2; ++half) {
            __m512 r[16];
            for (int t = 0; t < 16; ++t) {
                const int j = half * 16 + t;
                r[t] = j < num_rows ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, w + (row0 + j) * p.k + k0 + e0))
                                    : _mm512_setzero_ps();
            }
            transpose16x16(r);
            for (int t = 0; t < 16; ++t)
                _mm512_store_ps(reinterpret_cast<float*>(panel + (e0 / 2 + t) * kPanelCols + half * 16), r[t]);
        }
    }
}

void prefetch_panel(const LinearProblem& p, int64_t row0, int num_rows, int64_t k0, int depth) {
    for (int j = 0; j < num_rows; ++j) {
        const char* begin = static_cast<const char*>(p.w) + ((row0 + j) * p.k + k0) * 2;
        for (int64_t offset = 0; offset < depth * 2; offset += 64) _mm_prefetch(begin + offset, _MM_HINT_T1);
    }
}

// x_tile[d2][term][r] = the term's bf16 pair of x[r, k0 + 2 d2 : k0 + 2 d2 + 2] for r < num_rows, zero
// for num_rows <= r < kTileRows and past depth.
void pack_x_tile(const float* x, int64_t ldx, int num_rows, int depth, uint32_t* x_tile) {
    const int pairs = (depth + 1) / 2;
    std::memset(x_tile, 0, sizeof(uint32_t) * pairs * kGemmTerms * kTileRows);
    for (int r = 0; r < num_rows; ++r)
        for (int e0 = 0; e0 < depth; e0 += 32) {
            alignas(64) uint32_t terms[2][16];
            __m512i hi, lo;
            split_terms(x + r * ldx + e0, depth - e0, hi, lo);
            _mm512_store_si512(terms[0], hi);
            _mm512_store_si512(terms[1], lo);
            for (int t = 0; t < 16 && e0 / 2 + t < pairs; ++t)
                for (int term = 0; term < kGemmTerms; ++term)
                    x_tile[((e0 / 2 + t) * kGemmTerms + term) * kTileRows + r] = terms[term][t];
        }
}

// y[i, 0:num_cols] (+)= x_tile rows i . panel columns   for i < MR, over `pairs` pairs.
template <int MR>
void micro_kernel(int pairs, const uint32_t* x_tile, const uint32_t* panel, float* y, int64_t ldy, int num_cols,
                  bool accumulate) {
    if (accumulate) {
        for (int i = 0; i < MR; ++i) {
            _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(y + i * ldy + 16), _MM_HINT_T1);
        }
    }
    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int d2 = 0; d2 < pairs; ++d2) {
        const __m512bh b0 = as_bh(_mm512_load_si512(panel + d2 * kPanelCols));
        const __m512bh b1 = as_bh(_mm512_load_si512(panel + d2 * kPanelCols + 16));
        const uint32_t* xt = x_tile + d2 * kGemmTerms * kTileRows;
#pragma GCC unroll 2
        for (int term = 0; term < kGemmTerms; ++term)
#pragma GCC unroll 16
            for (int i = 0; i < MR; ++i) {
                const __m512bh a = as_bh(_mm512_set1_epi32(static_cast<int>(xt[term * kTileRows + i])));
                acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a, b0);
                acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a, b1);
            }
    }
    const __mmask16 m0 = mask16(num_cols), m1 = mask16(num_cols > 16 ? num_cols - 16 : 0);
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
void micro_kernel_dispatch(int num_rows, int pairs, const uint32_t* x_tile, const uint32_t* panel, float* y,
                           int64_t ldy, int num_cols, bool accumulate, std::integer_sequence<int, Rs...>) {
    (void)((num_rows == Rs + 1 ? (micro_kernel<Rs + 1>(pairs, x_tile, panel, y, ldy, num_cols, accumulate), true)
                               : false) ||
           ...);
}

void gemm_bf16(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch) {
    // scratch (gemm_scratch_floats(m) floats): the panel [kPanelPairs][32], then the x block
    // [num_tiles][pairs][terms][kTileRows]; both in 32-bit lanes.
    static_assert(kPanelCols <= kGemmMaxPanelCols);
    uint32_t* panel = reinterpret_cast<uint32_t*>(scratch);
    uint32_t* x_block = panel + kPanelPairs * kPanelCols;
    const int64_t num_tiles = (p.m + kTileRows - 1) / kTileRows;
    for (int64_t k0 = 0; k0 < p.k; k0 += kGemmPanelDepth) {
        const int depth = static_cast<int>(std::min<int64_t>(kGemmPanelDepth, p.k - k0));
        const int pairs = (depth + 1) / 2;
        const int64_t tile_lanes = int64_t{pairs} * kGemmTerms * kTileRows;
        for (int64_t t = 0; t < num_tiles; ++t) {
            const int num_rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - t * kTileRows));
            pack_x_tile(p.x + t * kTileRows * p.k + k0, p.k, num_rows, depth, x_block + t * tile_lanes);
        }
        for (int64_t col0 = n_begin; col0 < n_end; col0 += kPanelCols) {
            const int num_cols = static_cast<int>(std::min<int64_t>(kPanelCols, n_end - col0));
            pack_panel(p, col0, num_cols, k0, depth, panel);
            const int64_t next_col0 = col0 + kPanelCols;
            if (next_col0 < n_end)
                prefetch_panel(p, next_col0, static_cast<int>(std::min<int64_t>(kPanelCols, n_end - next_col0)), k0,
                               depth);
            for (int64_t t = 0; t < num_tiles; ++t) {
                const int num_rows = static_cast<int>(std::min<int64_t>(kTileRows, p.m - t * kTileRows));
                micro_kernel_dispatch(num_rows, pairs, x_block + t * tile_lanes, panel, p.y + t * kTileRows * p.n + col0,
                                      p.n, num_cols, k0 > 0, std::make_integer_sequence<int, kTileRows>{});
            }
        }
    }
}

}  // namespace

void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch) {
    if (p.w_dtype != DType::kBF16) return avx512::gemv(p, n_begin, n_end, next_rows, scratch);
    // Passes of equal size, each streaming the weights once for up to kGemvMaxRowsPerPass rows of x.
    const int64_t num_passes = (p.m + kGemvMaxRowsPerPass - 1) / kGemvMaxRowsPerPass;
    const int64_t rows_per_pass = (p.m + num_passes - 1) / num_passes;
    for (int64_t i0 = 0; i0 < p.m; i0 += rows_per_pass) {
        const int64_t rows = std::min(rows_per_pass, p.m - i0);
        const bool last_pass = i0 + rows >= p.m;   // an earlier pass reads the range's first rows next
        const void* then = last_pass ? next_rows : static_cast<const char*>(p.w) + n_begin * p.k * 2;
        gemv_dispatch(rows, p, p.x + i0 * p.k, p.y + i0 * p.n, n_begin, n_end, then, scratch,
                      std::make_integer_sequence<int, kGemvMaxRowsPerPass>{});
    }
}

void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch) {
    if (p.w_dtype != DType::kBF16) return avx512::gemm(p, n_begin, n_end, scratch);
    gemm_bf16(p, n_begin, n_end, scratch);
}

}  // namespace hichat::cpu::avx512_bf16
