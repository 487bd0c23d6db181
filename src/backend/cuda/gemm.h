// Gemm: matrix products through cuBLASLt. D[m, n] = A[m, k] * W[n, k]^T (+ D when accumulate),
// A and W bf16 row-major (or both FP8 E4M3 with a scale per row of each, run_fp8), D bf16 or fp32, fp32 accumulation. Owns the cuBLASLt handle and its
// workspace (allocated once); caches algorithm choices per shape. One stream's thread at a time.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hichat::cuda {

enum class GemmOut { kBf16, kF32 };

class Gemm {
public:
    // use_gemv: one-row products (m == 1) go to cuda::gemv instead of cuBLASLt.
    explicit Gemm(size_t workspace_bytes = 32 << 20, bool use_gemv = true);   // CHECK-fails if cuBLASLt cannot start
    ~Gemm();
    Gemm(const Gemm&) = delete;
    Gemm& operator=(const Gemm&) = delete;

    // accumulate: D += A * W^T (D must be fp32). Returns cudaSuccess or an error (e.g. no algorithm).
    cudaError_t run(const __nv_bfloat16* a, const __nv_bfloat16* w, void* d, GemmOut out_type, int m, int n, int k,
                    bool accumulate, cudaStream_t stream);

    // The FP8 product at unit scales, d[i, j] = bf16(sum_k a[i, k] * w[j, k]): a [m, k] and w [n, k]
    // E4M3 bytes, d [m, n] bf16; fp32 accumulation (cuBLASLt's fast one where it has it). The caller's
    // next kernel applies the scales as it reads d (qkv_rope_kv_write's row_scale / col_scale,
    // silu_mul_fp8), so the product is written once, at half the bytes of fp32, and never rescaled in a
    // pass of its own. cudaErrorNotSupported where cuBLASLt has no algorithm (it wants k and n multiples
    // of 16 and 16-byte aligned pointers).
    cudaError_t run_fp8_unit(const uint8_t* a, const uint8_t* w, __nv_bfloat16* d, int m, int n, int k,
                             cudaStream_t stream);
    // The scaled FP8 product D[i, j] (+)= a_scale[i] * w_scale[j] * sum_k a[i, k] * w[j, k] (a_scale [m],
    // w_scale [n] fp32 on the device, 16-byte aligned like the rest), by cuBLASLt itself: scale vectors
    // on both operands (OUTER_VEC_32F), D bf16 or fp32 (accumulate: beta = 1, D its own C), rounded
    // once. cudaErrorNotSupported where cuBLASLt has no such algorithm. (Its 13.1 heuristic offers none
    // while the vectors' pointers are unset, which an earlier probe took for none at all; with
    // placeholders it has one for each of the 8B's shapes, H100 2026-12-07.)
    cudaError_t run_fp8_scaled(const uint8_t* a, const float* a_scale, const uint8_t* w, const float* w_scale, void* d,
                               GemmOut out_type, int m, int n, int k, bool accumulate, cudaStream_t stream);
    // The same product for any consumer: run_fp8_scaled where cuBLASLt has it, else run_fp8_unit into
    // `scratch` (bf16, scratch_rows x n; m is taken in chunks of scratch_rows), then scale_fp8_product.
    cudaError_t run_fp8(const uint8_t* a, const float* a_scale, const uint8_t* w, const float* w_scale, void* d,
                        GemmOut out_type, int m, int n, int k, bool accumulate, __nv_bfloat16* scratch,
                        int scratch_rows, cudaStream_t stream);
    // Whether run_fp8_unit (and run_fp8) has an algorithm for m x n x k with 16-byte aligned pointers.
    bool fp8_supported(int m, int n, int k);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool use_gemv_;
};

}  // namespace hichat::cuda
