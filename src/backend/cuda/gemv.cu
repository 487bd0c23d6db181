// gemv: d[n] (+)= W[n, k] a[k] for a one-token step, where the weight read is everything: each warp
// streams its weight rows (or a slice of their k, when rows alone are too few to fill the GPU) with
// 16-byte loads, many in flight per lane, and reduces across the warp; fp32 accumulation. Two kernels,
// each a template of its split count only: gemv_kernel, one row per warp group with 16 loads in flight
// (plain products), and gemv_silu_kernel, the gate/up row pair with 8 each (the fused SwiGLU). One
// generic kernel with both paths and a runtime split count was 1.9-3% slower per batch-1 step (8B
// 4.201 -> 4.122, 1B 0.904 -> 0.877 ms per token, two rounds alternating in one device run,
// 2026-11-30): the gemv pays for code it never runs.
// Measured on the H200 (cuda_ops_bench, TB/s of weights; one machine, 2026-11-30): 6144 x 4096 2.72,
// 4096 x 14336 3.15, 128256 x 4096 4.22, against 2.64 / 2.74 / 4.14 for the earlier two rows x 4
// loads and cuBLASLt's 2.0 / 2.9 / 4.0 at m = 1 (another machine); at m = 4 and 8 cuBLASLt wins, hence
// m == 1 only. Tried and dropped (all slower): a block-wide k split for every shape (8 warps per row);
// an L2 bulk prefetch or the first weight loads issued before pdl_wait() (again on the lean kernel,
// the first 4 per lane: 8B 4.237 vs 4.129); an early PDL trigger; all 16 loads of a pass held in
// registers (84-92 registers: 6144 x 4096 2.13 vs 2.74 TB/s, 8B batch 1 4.94 vs 4.62 ms); the tail
// after the full passes as predicated groups of 4 loads (8B 4.40 vs 4.22); the activation read as one
// 16-byte load instead of the four 4-byte loads the struct copy compiles to (more registers, spills
// at the 32 cap: 8B 4.20-4.24 vs 4.13); weights copied into shared memory with cp.async, 3 pieces of
// 4 KiB in flight per warp, the first before pdl_wait(), on a grid of 1-4 blocks of 4 warps per SM (2.0
// TB/s at best, 8B batch 1 5.5-9.5 ms). Also dropped (docs/cuda-notes.md, afternoon of 2026-11-30): work folded
// into this kernel, namely the input RMSNorm made by every block, RoPE + KV write in the epilogue, the
// next RMSNorm by the last block. And (2026-11-30, later) a grid of at most 8 blocks per SM whose blocks
// walk their row groups instead of exiting (8B 4.57 vs 4.09, 1B 0.951 vs 0.859 ms per token; the
// pair instance spilled 88 bytes).
#include <algorithm>

#include "backend/cuda/device_info.h"
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;
using namespace gemv_parts;

// A weight load: read once, never reused, so it streams past L1 (L1::no_allocate) and leaves L1 to
// the activations every warp re-reads. __ldg allocates in L1: 8B batch 1 4.073 -> 4.041, 1B 0.870 ->
// 0.855 ms per token (one device run, 2026-11-30); an added L2::256B prefetch hint was slower (4.214).
__device__ __forceinline__ Bf16x8 load_weight(const Bf16x8* p) {
    int4 v;
    asm("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
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


// acc[r] += w_rows[r][c] . x[c] over this lane's words from c on (c, c + 32, ...; c advances) while a
// full pass of kUnroll words fits before `end`: kUnroll loads per row issued before their products.
template <int kRows, int kUnroll>
__device__ __forceinline__ void full_passes(const Bf16x8* const (&w_rows)[kRows], const Bf16x8* x, int& c, int end,
                                            float (&acc)[kRows]) {
    for (; c + 32 * (kUnroll - 1) < end; c += 32 * kUnroll) {
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
}

// acc[r] += w_rows[r][c] . x[c] over this lane's words c of the slice (lane, lane + 32, ...) in word
// order (the bits of one fixed summation, whatever the pass sizes): full passes of kUnroll, then for
// one row at most one pass of kUnroll / 2 and one of kUnroll / 4 (an 8B o-proj lane has 8 words, a
// down-proj lane 28: one round trip instead of two or three), then single words: 8B batch 1 4.061
// against 4.085 ms with passes of kUnroll and single words only, 1B 0.850 against 0.859 (two rounds
// each, one device run, 2026-11-30). The row pair keeps passes of 8 and single words: the extra passes
// spill there (4-20 bytes at the 32-register cap) and an 8B or 1B gate/up lane has whole passes anyway.
template <int kRows, int kUnroll>
__device__ __forceinline__ void stream_rows(const Bf16x8* const (&w_rows)[kRows], const Bf16x8* x, Slice s,
                                            int lane, float (&acc)[kRows]) {
    int c = s.begin + lane;
    full_passes<kRows, kUnroll>(w_rows, x, c, s.end, acc);
    if constexpr (kRows == 1) {
        full_passes<kRows, kUnroll / 2>(w_rows, x, c, s.end, acc);
        full_passes<kRows, kUnroll / 4>(w_rows, x, c, s.end, acc);
    }
    for (; c < s.end; c += 32) {
        const Bf16x8 av = x[c];
#pragma unroll
        for (int r = 0; r < kRows; ++r) fma8(acc[r], load_weight(&w_rows[r][c]), av);
    }
}


// Two kernels, each with nothing but its own product: the gemv lost 1-3% of a batch-1 step to code it
// never ran (runtime row counts and split counts, epilogues of the other use). Launched with
// programmatic dependent launch; the next kernel may start once every warp is past its weight stream
// (an earlier trigger, and loading weights before pdl_wait(), measured slower). At most 32 registers
// (8 blocks = 64 warps per SM): the stream is carried by resident warps, not by loads in flight per
// warp. The fused gate/up instance took 40 (48 warps) without the bound: 3.71 vs 3.84 TB/s, batch-1
// decode 1.055 / 4.62 vs 1.02 / 4.45 ms per token for the 1B / 8B (2026-11-30).
// grid: ceil(n / (kWarpsPerBlock / kSplits)). d[row] = W[row] . a, fp32 (optionally added to d) or bf16.
template <int kSplits>
__global__ void __launch_bounds__(kThreads, 8) gemv_kernel(const bf16* __restrict__ a, const bf16* __restrict__ w,
                                                        void* __restrict__ d, int n, int k, bool f32_out,
                                                        bool accumulate) {
    __shared__ float partial[kWarpsPerBlock][1];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * (kWarpsPerBlock / kSplits) + warp / kSplits;
    if (kSplits == 1 && row >= n) return;   // with splits > 1 every warp reaches the barrier
    const Bf16x8* const w_rows[1] = {reinterpret_cast<const Bf16x8*>(w + static_cast<int64_t>(min(row, n - 1)) * k)};
    kernels::pdl_wait();
    float sum[1] = {0.0f};
    stream_rows<1, 16>(w_rows, reinterpret_cast<const Bf16x8*>(a), slice_of<kSplits>(k / 8, warp % kSplits), lane, sum);
    kernels::pdl_launch_dependents();
    if (!reduce_rows<kSplits>(sum, partial, warp, lane, row < n)) return;
    if (f32_out) {
        float* out = static_cast<float*>(d);
        out[row] = accumulate ? out[row] + sum[0] : sum[0];
    } else {
        static_cast<bf16*>(d)[row] = __float2bfloat16(sum[0]);
    }
}

// grid: ceil(n / (kWarpsPerBlock / kSplits)). The gate row j and the up row j + n of w [2n, k]: the
// warp group writes out[j] = bf16(silu(g) * u) of the bf16-rounded g and u, the SwiGLU of silu_mul()
// without the round trip through memory; two rows with 8 loads each in flight.
template <int kSplits>
__global__ void __launch_bounds__(kThreads, 8) gemv_silu_kernel(const bf16* __restrict__ a, const bf16* __restrict__ w,
                                                             bf16* __restrict__ out, int n, int k) {
    __shared__ float partial[kWarpsPerBlock][2];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int j = blockIdx.x * (kWarpsPerBlock / kSplits) + warp / kSplits;
    if (kSplits == 1 && j >= n) return;
    const int64_t gate = min(j, n - 1);
    const Bf16x8* const w_rows[2] = {reinterpret_cast<const Bf16x8*>(w + gate * k),
                                     reinterpret_cast<const Bf16x8*>(w + (gate + n) * k)};
    kernels::pdl_wait();
    float sum[2] = {0.0f, 0.0f};
    stream_rows<2, 8>(w_rows, reinterpret_cast<const Bf16x8*>(a), slice_of<kSplits>(k / 8, warp % kSplits), lane, sum);
    kernels::pdl_launch_dependents();
    if (!reduce_rows<kSplits>(sum, partial, warp, lane, j < n)) return;
    const float g16 = __bfloat162float(__float2bfloat16(sum[0]));
    const float u16 = __bfloat162float(__float2bfloat16(sum[1]));
    out[j] = __float2bfloat16(kernels::silu(g16) * u16);
}


// Warps per gate/up row pair: 8 (one block per pair) where each lane keeps a load per row, else the
// most that do. Short-lived warps stream the 2 x intermediate rows more evenly than long ones: against
// one warp per pair (1.7 waves on an H200 for the 8B's 14,336 pairs) two made 8B 4.018 -> 3.959 and 1B
// 0.844 -> 0.836 ms per token; against two, 4 / 8 made 8B 3.913 -> 3.876 / 3.855 and 1B 0.813 -> 0.808
// / 0.802 (2026-11-30, alternating in one device run each; with __ldg loads splitting had measured
// slower, 4.24-4.28 vs 4.16).
int pair_splits(int k) {
    int splits = 8;
    while (splits > 1 && k / 8 / splits < 32) splits /= 2;
    return splits;
}


}  // namespace

bool gemv_applies(const void* a, const void* w, const void* d, int m, int k) {
    return m == 1 && k % 8 == 0 && k > 0 && kernels::host_aligned16(a) &&
           kernels::host_aligned16(w) && kernels::host_aligned(d, 4);
}

cudaError_t gemv(const bf16* a, const bf16* w, void* d, bool f32_out, int m, int n, int k, bool accumulate,
                 cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!gemv_applies(a, w, d, m, k) || n < 0 || (accumulate && !f32_out)) return cudaErrorInvalidValue;
    return launch_split(choose_splits(n, k / 8), n, stream, gemv_kernel<1>, gemv_kernel<2>, gemv_kernel<4>, gemv_kernel<8>,
                        a, w, d, n, k, f32_out, accumulate);
}

cudaError_t gemv_silu_mul(const bf16* a, const bf16* w_gate_up, bf16* out, int intermediate, int k,
                          cudaStream_t stream) {
    if (intermediate == 0) return cudaSuccess;
    if (!gemv_applies(a, w_gate_up, out, 1, k) || intermediate < 0) return cudaErrorInvalidValue;
    return launch_split(pair_splits(k), intermediate, stream, gemv_silu_kernel<1>,
                        gemv_silu_kernel<2>, gemv_silu_kernel<4>, gemv_silu_kernel<8>, a, w_gate_up, out,
                        intermediate, k);
}

}  // namespace hichat::cuda
