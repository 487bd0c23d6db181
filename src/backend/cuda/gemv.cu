// gemv: d[n] (+)= W[n, k] a[k] for a one-token step, where the weight read is everything: each warp
// streams kRowsPerWarp weight rows with 16-byte loads, kUnroll in flight per lane and row, and
// reduces across the warp. One kernel instance; fp32 accumulation. (Measured on the H200 against
// cuBLASLt at m = 1: 2.55 vs 2.33 TB/s at 6144 x 4096, 3.46 vs 3.15 at 4096 x 14336, 4.03 vs 4.13
// at 128256 x 4096; at m = 4 and 8 cuBLASLt wins, hence m == 1 only. A block-wide k split with
// programmatic dependent launch measured slower: 2.09 / 2.61 / 3.27 TB/s.)
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kRowsPerWarp = 2;
constexpr int kUnroll = 4;   // 16-byte weight loads in flight per lane and row
constexpr int kMaxRows = 1;  // activation rows

// A weight load: read once, never reused, so it bypasses L1 (read-only path).
__device__ __forceinline__ Bf16x8 load_weight(const Bf16x8* p) {
    const int4 v = __ldg(reinterpret_cast<const int4*>(p));
    return *reinterpret_cast<const Bf16x8*>(&v);
}

__device__ __forceinline__ void fma8(float& acc, const Bf16x8& w, const Bf16x8& a) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 wf = __bfloat1622float2(w.h[i]);
        const float2 af = __bfloat1622float2(a.h[i]);
        acc = fmaf(wf.x, af.x, acc);
        acc = fmaf(wf.y, af.y, acc);
    }
}

// grid: ceil(n / (kWarpsPerBlock * kRowsPerWarp)) blocks. k % 8 == 0, all pointers 16-byte aligned.
__global__ void __launch_bounds__(kThreads) gemv_kernel(const bf16* __restrict__ a, const bf16* __restrict__ w,
                                                        void* __restrict__ d, int m, int n, int k, bool f32_out,
                                                        bool accumulate) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = (blockIdx.x * kWarpsPerBlock + warp) * kRowsPerWarp;
    if (row0 >= n) return;
    const int k8 = k / 8;
    const Bf16x8* w_rows[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
        w_rows[r] = reinterpret_cast<const Bf16x8*>(w + static_cast<int64_t>(min(row0 + r, n - 1)) * k);
    const Bf16x8* a_rows = reinterpret_cast<const Bf16x8*>(a);

    float acc[kRowsPerWarp][kMaxRows] = {};
    int c = lane;
    for (; c + 32 * (kUnroll - 1) < k8; c += 32 * kUnroll) {
        Bf16x8 wv[kRowsPerWarp][kUnroll];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) wv[r][u] = load_weight(&w_rows[r][c + 32 * u]);
#pragma unroll
        for (int j = 0; j < kMaxRows; ++j) {
            if (j >= m) break;
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const Bf16x8 av = a_rows[static_cast<int64_t>(j) * k8 + c + 32 * u];
#pragma unroll
                for (int r = 0; r < kRowsPerWarp; ++r) fma8(acc[r][j], wv[r][u], av);
            }
        }
    }
    for (; c < k8; c += 32) {
        Bf16x8 wv[kRowsPerWarp];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) wv[r] = load_weight(&w_rows[r][c]);
#pragma unroll
        for (int j = 0; j < kMaxRows; ++j) {
            if (j >= m) break;
            const Bf16x8 av = a_rows[static_cast<int64_t>(j) * k8 + c];
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) fma8(acc[r][j], wv[r], av);
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
        for (int j = 0; j < kMaxRows; ++j) {
            if (j >= m) break;
            const float sum = kernels::warp_sum(acc[r][j]);
            const int row = row0 + r;
            if (lane != 0 || row >= n) continue;
            const int64_t at = static_cast<int64_t>(j) * n + row;
            if (f32_out) {
                float* out = static_cast<float*>(d);
                out[at] = accumulate ? out[at] + sum : sum;
            } else {
                static_cast<bf16*>(d)[at] = __float2bfloat16(sum);
            }
        }
    }
}

}  // namespace

bool gemv_applies(const void* a, const void* w, const void* d, int m, int k) {
    return m == 1 && k % 8 == 0 && k > 0 && kernels::host_aligned16(a) &&
           kernels::host_aligned16(w) && (reinterpret_cast<uintptr_t>(d) & 3u) == 0;
}

cudaError_t gemv(const bf16* a, const bf16* w, void* d, bool f32_out, int m, int n, int k, bool accumulate,
                 cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!gemv_applies(a, w, d, m, k) || n < 0 || (accumulate && !f32_out)) return cudaErrorInvalidValue;
    const int rows_per_block = kWarpsPerBlock * kRowsPerWarp;
    gemv_kernel<<<kernels::ceil_div(n, rows_per_block), kThreads, 0, stream>>>(a, w, d, m, n, k, f32_out, accumulate);
    return cudaGetLastError();
}

}  // namespace hichat::cuda
