// gemv: d[n] (+)= W[n, k] a[k] for a one-token step, where the weight read is everything: each warp
// streams its weight rows with 16-byte loads, many in flight per lane, and reduces across the warp;
// fp32 accumulation. Two instances: one row per warp with 16 loads in flight (plain products) and two
// rows with 8 (the fused gate/up + SwiGLU, whose rows come in pairs).
// Measured on the H200 (cuda_ops_bench, TB/s of weights; one machine, 2026-11-30): 6144 x 4096 2.72,
// 4096 x 14336 3.15, 128256 x 4096 4.22, against 2.64 / 2.74 / 4.14 for the earlier two rows x 4
// loads and cuBLASLt's 2.0 / 2.9 / 4.0 at m = 1 (another machine); at m = 4 and 8 cuBLASLt wins, hence
// m == 1 only. Tried and dropped (all slower): a block-wide k split; an L2 bulk prefetch or the first
// weight loads issued before pdl_wait(); an early PDL trigger; all 16 loads of a pass held in
// registers (84-92 registers: 6144 x 4096 2.13 vs 2.74 TB/s, 8B batch 1 4.94 vs 4.62 ms); weights
// copied into shared memory with cp.async, 3 pieces of 4 KiB in flight per warp, the first before
// pdl_wait(), on a grid of 1-4 blocks of 4 warps per SM (2.0 TB/s at best, 8B batch 1 5.5-9.5 ms).
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
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

// grid: ceil(n / (kWarpsPerBlock * kRows)) blocks; each warp streams kRows weight rows with kUnroll
// 16-byte loads in flight per lane and row. k % 8 == 0, all pointers 16-byte aligned.
// With silu_stride > 0 (kRows == 2; w is the fused gate/up weight [2 * silu_stride, k], n = silu_stride,
// grid ceil(n / kWarpsPerBlock)) a warp's rows are the gate row j and the up row j + silu_stride, and it
// writes bf16(silu(g) * u) of the bf16-rounded g and u: the SwiGLU of silu_mul() without the round trip
// through memory.
// Launched with programmatic dependent launch; the next kernel may start once every warp is past its
// weight stream (an earlier trigger, and loading weights before pdl_wait(), measured slower).
// At most 32 registers (8 blocks = 64 warps per SM): the stream is carried by resident warps, not by
// loads in flight per warp. The fused gate/up instance took 40 (48 warps) without the bound: 3.71 vs
// 3.84 TB/s, batch-1 decode 1.055 / 4.62 vs 1.02 / 4.45 ms per token for the 1B / 8B (2026-11-30).
template <int kRows, int kUnroll>
__global__ void __launch_bounds__(kThreads, 8) gemv_kernel(const bf16* __restrict__ a, const bf16* __restrict__ w,
                                                        void* __restrict__ d, int n, int k, bool f32_out,
                                                        bool accumulate, int silu_stride) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = (blockIdx.x * kWarpsPerBlock + warp) * (silu_stride > 0 ? 1 : kRows);
    if (row0 >= n) return;
    const int k8 = k / 8;
    const Bf16x8* w_rows[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const int row = silu_stride > 0 ? row0 + r * silu_stride : min(row0 + r, n - 1);
        w_rows[r] = reinterpret_cast<const Bf16x8*>(w + static_cast<int64_t>(row) * k);
    }
    const Bf16x8* x = reinterpret_cast<const Bf16x8*>(a);
    kernels::pdl_wait();

    float acc[kRows] = {};
    int c = lane;
    for (; c + 32 * (kUnroll - 1) < k8; c += 32 * kUnroll) {
        Bf16x8 wv[kRows][kUnroll];
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) wv[r][u] = load_weight(&w_rows[r][c + 32 * u]);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const Bf16x8 av = x[c + 32 * u];
#pragma unroll
            for (int r = 0; r < kRows; ++r) fma8(acc[r], wv[r][u], av);
        }
    }
    for (; c < k8; c += 32) {
        const Bf16x8 av = x[c];
#pragma unroll
        for (int r = 0; r < kRows; ++r) fma8(acc[r], load_weight(&w_rows[r][c]), av);
    }
    kernels::pdl_launch_dependents();
    if (silu_stride > 0) {
        const float g = kernels::warp_sum(acc[0]), u = kernels::warp_sum(acc[kRows - 1]);
        const float g16 = __bfloat162float(__float2bfloat16(g)), u16 = __bfloat162float(__float2bfloat16(u));
        if (lane == 0) static_cast<bf16*>(d)[row0] = __float2bfloat16(kernels::silu(g16) * u16);
        return;
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const float sum = kernels::warp_sum(acc[r]);
        const int row = row0 + r;
        if (lane != 0 || row >= n) continue;
        if (f32_out) {
            float* out = static_cast<float*>(d);
            out[row] = accumulate ? out[row] + sum : sum;
        } else {
            static_cast<bf16*>(d)[row] = __float2bfloat16(sum);
        }
    }
}

template <int kRows, int kUnroll>
cudaError_t launch_gemv(const bf16* a, const bf16* w, void* d, int n, int k, bool f32_out, bool accumulate,
                        int silu_stride, cudaStream_t stream) {
    const int rows_per_block = kWarpsPerBlock * (silu_stride > 0 ? 1 : kRows);
    return kernels::launch_pdl(gemv_kernel<kRows, kUnroll>, dim3(kernels::ceil_div(n, rows_per_block)), dim3(kThreads),
                               0, stream, a, w, d, n, k, f32_out, accumulate, silu_stride);
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
    return launch_gemv<1, 16>(a, w, d, n, k, f32_out, accumulate, 0, stream);
}

cudaError_t gemv_silu_mul(const bf16* a, const bf16* w_gate_up, bf16* out, int intermediate, int k,
                          cudaStream_t stream) {
    if (intermediate == 0) return cudaSuccess;
    if (!gemv_applies(a, w_gate_up, out, 1, k) || intermediate < 0) return cudaErrorInvalidValue;
    return launch_gemv<2, 8>(a, w_gate_up, out, intermediate, k, false, false, intermediate, stream);
}

}  // namespace hichat::cuda
