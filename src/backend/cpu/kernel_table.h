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
    const float* w_scale = nullptr;  // kI8 weights: row n means w[n, :] * w_scale[n]
    const uint16_t* q4_scales = nullptr;  // kQ4 weights: f16 group scales (base/q4_layout.h)
    const uint8_t* q4_zeros = nullptr;    // kQ4 weights: the groups' zero codes; null: 8 for every group
};

// x quantized for int8 and 4-bit weights (linear_i8, linear_q4), per row i: scale[i] = amax(x[i, :]) /
// 127 and codes q[i, c] = rint(x[i, c] * 127 / amax) in [-127, 127] (a zero row: scale 0, codes 0),
// rows `stride` bytes apart, 64-byte aligned.
//   For int8 weights (quantize_row_int8): the bytes q + 128 (vpdpbusd's unsigned operand) in column
//   order, stride k rounded up to 128, the padding 128 (code 0).
//   For 4-bit weights (quantize_row_q4x): the signed bytes q in the order of base/q4_layout.h
//   (q4_x_index), stride q4_padded(k), the padding 0; and group_sums[i * (stride / 32) + g] =
//   float(sum of the codes q[i, 32 g : 32 g + 32]) in column order.
struct Int8Rows {
    const uint8_t* codes = nullptr;
    const float* scales = nullptr;
    int64_t stride = 0;
    const float* group_sums = nullptr;
};
inline int64_t int8_rows_stride(int64_t k) { return (k + 127) / 128 * 128; }
// Quantizes row x[0:k) as above into codes[0:stride) and *scale.
void quantize_row_int8(const float* x, int64_t k, uint8_t* codes, float* scale);
// The same codes for 4-bit weights, into codes[0:q4_padded(k)), with the sums of its q4_groups(k) groups.
void quantize_row_q4x(const float* x, int64_t k, uint8_t* codes, float* scale, float* group_sums);

// The largest k linear_i8 takes: its int32 sums hold 2 * 127 * 128 * k.
inline constexpr int64_t kInt8MaxK = int64_t{1} << 16;

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
    // int8 weights (p.w_dtype kI8, p.w_scale), x quantized (Int8Rows) for any m:
    //   y[i, j] = (x.scales[i] * p.w_scale[j]) * float(sum_c q[i, c] * w[j, c])   for n_begin <= j < n_end,
    // the integer sum exact (the same value, so the same y, on every path). Thread-safe for disjoint
    // column ranges; needs no scratch.
    void (*linear_i8)(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
    const char* linear_i8_path;  // "avx512_vnni", "avx2" or "portable"
    // 4-bit weights (p.w_dtype kQ4, p.q4_scales; base/q4_layout.h), x quantized with group sums:
    //   y[i, j] = x.scales[i] * sum_g scale[j, g] * (sum_{c in g} q[i, c] * u[j, c] - z[j, g] * group_sums[i, g]),
    // where u are the stored nibbles and z the zero codes (p.q4_zeros, or 8): the integer sums of each group exact, the groups summed in fp32
    // (in an order that differs between paths: they agree within fp32 rounding of those terms).
    // Thread-safe for disjoint column ranges; needs no scratch.
    void (*linear_q4)(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
    const char* linear_q4_path;  // "avx512_vnni", "avx2" or "portable"

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
    void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
    void linear_q4(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
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
    void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
    void linear_q4(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
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
namespace avx512_vnni {  // needs AVX512_VNNI besides the AVX-512 level (cpu_has_avx512_vnni())
    void linear_i8(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
    void linear_q4(const LinearProblem& p, const Int8Rows& x, int64_t n_begin, int64_t n_end);
}  // namespace avx512_vnni
namespace avx512_bf16 {  // bf16 weights; other dtypes go to avx512::gemv / gemm
    void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* next_rows, float* scratch);
    void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch);
}  // namespace avx512_bf16
#endif

}  // namespace hichat::cpu
