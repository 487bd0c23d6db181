// The per-SIMD-level kernels behind the CPU ops (internal to backend/cpu). Each level lives in its own
// files compiled with its own target flags (linear_avx512.cpp, vector_avx2.cpp, ...); only code reached
// through kernels_for(level) runs those instructions, so the rest of the binary runs on any x86-64.
#pragma once

#include <cstdint>

#include "backend/cpu/cpu_features.h"
#include "base/dtype.h"

namespace hichat::cpu {

// y = x * w^T for one linear layer: all row-major, no bias (linear() adds it).
struct LinearProblem {
    const float* x = nullptr;  // [m, k]
    const void* w = nullptr;   // [n, k] in w_dtype
    DType w_dtype = DType::kF32;
    float* y = nullptr;        // [m, n]
    int64_t m = 0, n = 0, k = 0;
};

inline constexpr int kGemmMaxPanelCols = 32;    // widest packed weight panel of any level
inline constexpr int kGemmPanelDepth = 192;     // k per packed panel (panel = depth x cols floats)

inline constexpr int kGemvMaxRowsPerPass = 8;  // gemv() takes x in passes of up to this many rows

// Floats of per-thread scratch that gemv() needs: up to kGemvMaxRowsPerPass rows of x, repacked (as
// fp32 padded to 16, or as two bf16 terms padded to 32).
inline int64_t gemv_scratch_floats(int64_t m, int64_t k) {
    return (m < kGemvMaxRowsPerPass ? m : kGemvMaxRowsPerPass) * (k + 32);
}

// Floats of per-thread scratch that gemm() needs for m rows of x: a packed weight panel [depth][cols],
// room to convert it ([cols][depth]), and the x block [m rounded up to whole tiles][depth].
inline int64_t gemm_scratch_floats(int64_t m) {
    return (2 * int64_t{kGemmMaxPanelCols} + m + 16) * kGemmPanelDepth;
}

struct KernelTable {
    SimdLevel level;
    int gemm_panel_cols;  // threads split n at multiples of this
    int max_gemv_rows;    // linear() uses gemv up to this m, gemm beyond

    // y[:, n_begin:n_end] for any m, streaming each weight row once per pass of up to
    // kGemvMaxRowsPerPass rows of x and reusing it for all of them (best for small m: decode).
    // Thread-safe for disjoint column ranges; `scratch` holds gemv_scratch_floats(m, k) floats, 64-byte
    // aligned, owned by the calling thread. `next_rows` (nullable, same k and dtype) is where the calling
    // thread reads weights next: a kernel may start bringing those rows in while it finishes this range.
    void (*gemv)(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch);

    // Same result, blocked for large m (prefill): packs [depth x cols] weight panels as fp32, and the
    // x block they multiply, into `scratch` (gemm_scratch_floats(m) floats, 64-byte aligned, owned by
    // the calling thread).
    void (*gemm)(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch);

    // Attention's two products over a run of key/value rows (row j at rows + j * row_stride):
    // out[j] = q[0:dim] . rows[j, 0:dim]   for j < num_rows.
    void (*dot_rows)(const float* q, const float* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                     float* out);
    // out[0:dim] += sum_j weights[j] * rows[j, 0:dim].
    void (*sum_rows_weighted)(const float* weights, const float* rows, int64_t row_stride, int64_t num_rows,
                              int64_t dim, float* out);
    // The same two products over rows stored as bf16 / f16 (bit patterns): each element is widened to
    // fp32 in registers (bf16: a 16-bit shift; f16: F16C / AVX-512 conversion) and accumulated in fp32.
    void (*dot_rows_bf16)(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                          float* out);
    void (*dot_rows_f16)(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                         float* out);
    void (*sum_rows_weighted_bf16)(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                                   int64_t dim, float* out);
    void (*sum_rows_weighted_f16)(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                                  int64_t dim, float* out);
    // x[j] = exp(scale * x[j] - max) / sum_i exp(scale * x[i] - max)   for j < n (n >= 1).
    void (*softmax)(float* x, int64_t n, float scale);
    // out[j] = silu(gate[j]) * up[j] = gate[j] / (1 + exp(-gate[j])) * up[j]   for j < n; out may alias gate.
    void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
};

const KernelTable& kernels_for(SimdLevel level);
inline const KernelTable& active_kernels() { return kernels_for(active_simd_level()); }

// The kernels of each level, defined in linear_<level>.cpp and vector_<level>.cpp; same contracts as
// the KernelTable members. Call them only through kernels_for() (their instructions may be missing).
namespace portable {
    float dot(const float* a, const float* b, int64_t n);  // shared by the portable kernels
    void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch);
    void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch);
    void dot_rows(const float* q, const float* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                  float* out);
    void sum_rows_weighted(const float* weights, const float* rows, int64_t row_stride, int64_t num_rows,
                           int64_t dim, float* out);
    void dot_rows_bf16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                       float* out);
    void dot_rows_f16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                      float* out);
    void sum_rows_weighted_bf16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                                int64_t dim, float* out);
    void sum_rows_weighted_f16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                               int64_t dim, float* out);
    void softmax(float* x, int64_t n, float scale);
    void silu_mul(const float* gate, const float* up, int64_t n, float* out);
}  // namespace portable
#if defined(HICHAT_CPU_X86_KERNELS)
namespace avx2 {
    void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch);
    void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch);
    void dot_rows(const float* q, const float* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                  float* out);
    void sum_rows_weighted(const float* weights, const float* rows, int64_t row_stride, int64_t num_rows,
                           int64_t dim, float* out);
    void dot_rows_bf16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                       float* out);
    void dot_rows_f16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                      float* out);
    void sum_rows_weighted_bf16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                                int64_t dim, float* out);
    void sum_rows_weighted_f16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                               int64_t dim, float* out);
    void softmax(float* x, int64_t n, float scale);
    void silu_mul(const float* gate, const float* up, int64_t n, float* out);
}  // namespace avx2
namespace avx512 {
    void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch);
    void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch);
    void dot_rows(const float* q, const float* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                  float* out);
    void sum_rows_weighted(const float* weights, const float* rows, int64_t row_stride, int64_t num_rows,
                           int64_t dim, float* out);
    void dot_rows_bf16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                       float* out);
    void dot_rows_f16(const float* q, const uint16_t* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                      float* out);
    void sum_rows_weighted_bf16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                                int64_t dim, float* out);
    void sum_rows_weighted_f16(const float* weights, const uint16_t* rows, int64_t row_stride, int64_t num_rows,
                               int64_t dim, float* out);
    void softmax(float* x, int64_t n, float scale);
    void silu_mul(const float* gate, const float* up, int64_t n, float* out);
}  // namespace avx512
namespace avx512_bf16 {  // bf16 weights; other dtypes go to avx512::gemv / gemm
    void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch);
    void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch);
}  // namespace avx512_bf16
#endif

}  // namespace hichat::cpu
