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

    // The FP8 product D[i, j] (+)= a_scale[i] * w_scale[j] * sum_k a[i, k] * w[j, k]: a [m, k] and
    // w [n, k] E4M3 bytes, a_scale [m] and w_scale [n] fp32 on the device. cuBLASLt computes the
    // unit-scale product into `scratch` (fp32, scratch_rows x n; m is taken in chunks of scratch_rows)
    // with fast accumulation, and scale_fp8_product applies the scales: asked for FP8 with per-row
    // scale vectors (OUTER_VEC_32F on A and B, pointers not yet set), cuBLASLt 13.1's heuristic gave no
    // algorithm, fast or exact accumulation, for any of the 8B's shapes at m = 16-4096 (H200 2026-12-03,
    // H100 2026-12-06: bench/results/fp8-attn-occupancy-h100-2026-12-06.txt; torch reaches one, so see
    // bench/results/fp8-scaled-gemm-2026-12-06.patch). cudaErrorNotSupported where cuBLASLt has no
    // algorithm (it wants k and n multiples of 16 and 16-byte aligned pointers).
    cudaError_t run_fp8(const uint8_t* a, const float* a_scale, const uint8_t* w, const float* w_scale, void* d,
                        GemmOut out_type, int m, int n, int k, bool accumulate, float* scratch, int scratch_rows,
                        cudaStream_t stream);
    // Whether run_fp8 has an algorithm for m x n x k with 16-byte aligned pointers.
    bool fp8_supported(int m, int n, int k);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    bool use_gemv_;
};

}  // namespace hichat::cuda
