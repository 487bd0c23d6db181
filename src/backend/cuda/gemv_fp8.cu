// fp8_gemv: D[m, n] (+)= (A[m, k] W[n, k]^T) * w_scale[n] for steps of 1-8 tokens over FP8 (E4M3)
// weights, on the tensor cores: each warp owns a tile of 16 weight rows over a slice of k and runs
// mma.sync m16n8k16 (bf16 in, fp32 accumulate) with the weights as the 16 x 16 A operand and the
// step's tokens as the 8 columns of B (columns past m are zero). The FP8 bytes become bf16 in
// registers with three integer ops per pair (fp8_pair_to_bf16x2), so a weight costs under two integer
// ops and no FMA: the CUDA-core version (a float FMA per weight after decoding) was ALU-bound at 0.83x
// of the bf16 gemv's speed (H200, 2026-12-03). Bf16 activations (weight-only FP8).
//
// k is walked in steps of 64: lane (g = lane / 4, t = lane % 4) loads bytes [16t, 16t + 16) of the step
// from rows g and g + 8 of its tile (one 16-byte load each) and the matching 16 activations of token g.
// A dot product does not care in which order k is summed, so step byte 16t + 4j + e feeds mma j of the
// step: bytes 0 and 2 of each 4-byte word as the fragment's k pair (2t, 2t + 1), bytes 1 and 3 as
// (2t + 8, 2t + 9); the activations are paired the same way (one byte permute per pair). Two
// instances: the plain product and the SwiGLU of a gate/up pair of tiles (fp8_gemv_silu_mul).
//
// Scaling: the decoding yields e4m3 x 2^-120 (the E4M3 exponent read with bf16's bias), and the
// activations are multiplied by 2^100 (exact in bf16 below 2^28), so the products sit in fp32's normal
// range; the row's sum is multiplied by 2^20 * w_scale[row] at the end.

#include "backend/cuda/e4m3_bf16.cuh"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kTileRows = 16, kStepK = 64, kMaxTokens = 8;
// Passes of kUnroll steps whose loads are in flight together, and blocks per SM in the launch bound.
// Compile-time knobs only for measurement (scripts/build_kernel_variant.sh builds one binary per
// setting, scripts/device_fp8_gemv_ab.sh compares them). 8B batch 1 on an H100, 2026-12-06 (bench/results/fp8-gemv-ilv-h100-2026-12-06.txt, two
// rounds alternating): 4 steps and 3 blocks with each slice a contiguous k range (main before) 3.536 /
// 3.537 ms per token; the same with the interleaved passes below 3.461 / 3.462; 2 steps and 4 blocks,
// interleaved, 3.449 / 3.449. Blocks of 16 warps (8 slices of k per gate/up tile, and 16 per o and
// down tile, whose 256 tiles fit in 2 blocks per SM) were slower: 3.572 against 3.453 (H100,
// 2026-12-07, one round). A tile's k slices spread over a cluster of 2-8 blocks (16-64 slices, the
// partial sums meeting through distributed shared memory) were slower at every shape (H100,
// 2026-12-07 e, bench/results/fp8-gemv-attn-clusters-h100-2026-12-07e.txt): m = 1 o 12.0 / 13.6 /
// 18.1 / 27.7 us at 8 / 16 / 32 / 64 slices, gate|up 47.5 / 56.9 / 73.9 / 134.2; 8B batch 1 5.30
// against 3.50 ms per token with up to 8 blocks per tile.
#ifndef FP8_UNROLL
#define FP8_UNROLL 2
#endif
#ifndef FP8_MINB
#define FP8_MINB 4
#endif
constexpr int kUnroll = FP8_UNROLL;
constexpr uint32_t kActScale = kernels::kBf16x2Pow100;   // on the activations
constexpr float kUnscale = 0x1p20f;          // 2^120 * 2^-100

__device__ __forceinline__ uint4 load_weight(const uint8_t* p) {   // read once: streamed past L1
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
    const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
    return *reinterpret_cast<const uint32_t*>(&r);
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A lane's 16 bytes of rows g and g + 8 in one step.
struct StepWeights {
    uint4 lo_row, hi_row;
};

__device__ __forceinline__ StepWeights load_step(const uint8_t* w_lo, const uint8_t* w_hi, int k0) {
    return {load_weight(w_lo + k0), load_weight(w_hi + k0)};
}

// The step's four mma: word j of each row's load with activations 4j..4j+3 of the lane's 16 (token g's,
// or zeros for a lane past the step's tokens).
__device__ __forceinline__ void mma_step(float (&c)[4], const StepWeights& s, const bf16* act, bool token, int k0) {
    const uint4 act0 = token ? __ldg(reinterpret_cast<const uint4*>(act + k0)) : make_uint4(0, 0, 0, 0);
    const uint4 act1 = token ? __ldg(reinterpret_cast<const uint4*>(act + k0 + 8)) : make_uint4(0, 0, 0, 0);
    const uint32_t lo[4] = {s.lo_row.x, s.lo_row.y, s.lo_row.z, s.lo_row.w};
    const uint32_t hi[4] = {s.hi_row.x, s.hi_row.y, s.hi_row.z, s.hi_row.w};
    const uint32_t av[8] = {act0.x, act0.y, act0.z, act0.w, act1.x, act1.y, act1.z, act1.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const uint32_t even = bf16x2_mul(__byte_perm(av[2 * j], av[2 * j + 1], 0x5410), kActScale);   // 4j, 4j+2
        const uint32_t odd = bf16x2_mul(__byte_perm(av[2 * j], av[2 * j + 1], 0x7632), kActScale);    // 4j+1, 4j+3
        using kernels::fp8_pair_to_bf16x2;
        mma_bf16(c, fp8_pair_to_bf16x2(lo[j] << 8), fp8_pair_to_bf16x2(hi[j] << 8), fp8_pair_to_bf16x2(lo[j]),
                 fp8_pair_to_bf16x2(hi[j]), even, odd);
    }
}

// grid: ceil(tiles / (kWarps / splits)) blocks; warp w of a block takes local tile w / splits and
// slice w % splits of its k steps: passes slice, slice + splits, ... (then the steps past the last
// whole pass the same way), so that a tile's warps read neighbouring bytes of each row at the same
// time rather than `splits` runs far apart (2% faster per 8B step than contiguous slices). The
// slices' partial tiles meet in shared memory and are added in slice order, so the bits depend on
// (n, k) and not on the launch or m.
// Plain (kPair false): tile = blockIdx.x * (kWarps / splits) + local tile, rows [16 tile, 16 tile + 16)
// of w [n, k]; d[tok, row] (+)= the product, fp32 or bf16.
// SwiGLU (kPair true, n = 2 * intermediate rows of gate then up): local tiles 2p and 2p + 1 are the
// gate and up rows [16 j, 16 j + 16) of pair j = blockIdx.x * (kWarps / splits / 2) + p, and d (bf16
// [m, intermediate]) gets silu(g) * u of the bf16-rounded g and u, as silu_mul() of the bf16 products.
template <bool kPair>
__global__ void __launch_bounds__(kThreads, FP8_MINB) fp8_gemv_kernel(const bf16* __restrict__ a, const uint8_t* __restrict__ w,
                                                            const float* __restrict__ w_scale, void* __restrict__ d,
                                                            int m, int n, int k, int splits, bool f32_out,
                                                            bool accumulate) {
    __shared__ float partial[kWarps][4][32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int local = warp / splits, slice = warp % splits;
    const int half = n / 2;   // kPair: the intermediate size
    int row0, last_row;       // the tile's first row; rows past last_row read it and are not written
    if constexpr (kPair) {
        const int j0 = (blockIdx.x * (kWarps / splits / 2) + local / 2) * kTileRows, part = local % 2;
        row0 = part * half + j0;
        last_row = part * half + half - 1;
    } else {
        row0 = (blockIdx.x * (kWarps / splits) + local) * kTileRows;
        last_row = n - 1;
    }
    const int steps = k / kStepK;
    const uint8_t* w_lo = w + static_cast<int64_t>(min(row0 + g, last_row)) * k + 16 * t;
    const uint8_t* w_hi = w + static_cast<int64_t>(min(row0 + g + 8, last_row)) * k + 16 * t;
    const bool token = g < m;
    const bf16* act = a + static_cast<int64_t>(token ? g : 0) * k + 16 * t;
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int passes = steps / kUnroll;
    kernels::pdl_wait();
    for (int p = slice; p < passes; p += splits) {
        StepWeights loads[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) loads[u] = load_step(w_lo, w_hi, (p * kUnroll + u) * kStepK);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) mma_step(c, loads[u], act, token, (p * kUnroll + u) * kStepK);
    }
    for (int r = passes * kUnroll + slice; r < steps; r += splits)
        mma_step(c, load_step(w_lo, w_hi, r * kStepK), act, token, r * kStepK);
    kernels::pdl_launch_dependents();
    if (kPair || splits > 1) {
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp][i][lane] = c[i];
        __syncthreads();
        if (slice == 0)
            for (int p = 1; p < splits; ++p)
#pragma unroll
                for (int i = 0; i < 4; ++i) c[i] += partial[warp + p][i][lane];
    }
    // c[0], c[1]: row row0 + g, tokens 2t and 2t + 1; c[2], c[3]: row row0 + g + 8.
    if constexpr (kPair) {
        __syncthreads();   // every slice read; the up tile's sums go where the gate tile's warp finds them
        if (slice == 0 && local % 2 == 1)
#pragma unroll
            for (int i = 0; i < 4; ++i) partial[warp][i][lane] = c[i] * kUnscale;
        __syncthreads();
        if (slice != 0 || local % 2 == 1) return;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int j = row0 + g + (i / 2) * 8, tok = 2 * t + i % 2;
            if (j >= half || tok >= m) continue;
            const float gate = __bfloat162float(__float2bfloat16(c[i] * kUnscale * w_scale[j]));
            const float up = __bfloat162float(__float2bfloat16(partial[warp + splits][i][lane] * w_scale[half + j]));
            static_cast<bf16*>(d)[static_cast<int64_t>(tok) * half + j] = __float2bfloat16(kernels::silu(gate) * up);
        }
    } else {
        if (slice != 0) return;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = row0 + g + (i / 2) * 8, tok = 2 * t + i % 2;
            if (row >= n || tok >= m) continue;
            const float v = c[i] * kUnscale * w_scale[row];
            const int64_t at = static_cast<int64_t>(tok) * n + row;
            if (f32_out) {
                float* out = static_cast<float*>(d);
                out[at] = accumulate ? out[at] + v : v;
            } else {
                static_cast<bf16*>(d)[at] = __float2bfloat16(v);
            }
        }
    }
}

// Slices of k per tile (1, 2, 4 or 8 warps of one block; at most max_splits): the most that leave
// each warp at least kUnroll steps. Measured on the 8B's shapes at m = 1 and 8 (H200, 2026-12-03,
// cuda_ops_bench fp8_splits, us for 1 / 2 / 4 / 8 splits): q|k|v 30.2 / 20.1 / 15.7 / 13.8, o 28.0 /
// 17.8 / 12.3 / 11.1, gate|up 41.7 / 52.2 / 42.4 / 38.0, down 89.2 / 49.8 / 31.7 / 24.7: the most is
// fastest everywhere (fewer splits where the tiles alone fill the GPU was 53.4 for gate|up).
int choose_splits(int steps, int max_splits) {
    int splits = max_splits;
    while (splits > 1 && steps / splits < kUnroll) splits /= 2;
    return splits;
}

}  // namespace

bool fp8_gemv_applies(const void* a, const void* w, const void* d, int m, int k) {
    return m >= 1 && m <= kMaxTokens && k % kStepK == 0 && k > 0 && kernels::host_aligned16(a) &&
           kernels::host_aligned16(w) && kernels::host_aligned(d, 4);
}

cudaError_t fp8_gemv(const bf16* a, const uint8_t* w, const float* w_scale, void* d, bool f32_out, int m, int n,
                     int k, bool accumulate, cudaStream_t stream, int splits) {
    if (n == 0) return cudaSuccess;
    if (!fp8_gemv_applies(a, w, d, m, k) || n < 0 || w_scale == nullptr || (accumulate && !f32_out) ||
        (splits != 0 && splits != 1 && splits != 2 && splits != 4 && splits != 8)) {
        return cudaErrorInvalidValue;
    }
    const int tiles = kernels::ceil_div(n, kTileRows);
    if (splits == 0) splits = choose_splits(k / kStepK, kWarps);
    return kernels::launch_pdl(fp8_gemv_kernel<false>, dim3(kernels::ceil_div(tiles, kWarps / splits)), dim3(kThreads),
                               0, stream, a, w, w_scale, d, m, n, k, splits, f32_out, accumulate);
}

cudaError_t fp8_gemv_silu_mul(const bf16* a, const uint8_t* w_gate_up, const float* w_scale, bf16* out, int m,
                              int intermediate, int k, cudaStream_t stream) {
    if (intermediate == 0) return cudaSuccess;
    if (!fp8_gemv_applies(a, w_gate_up, out, m, k) || intermediate < 0 || w_scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    const int pairs = kernels::ceil_div(intermediate, kTileRows);
    const int splits = choose_splits(k / kStepK, kWarps / 2);
    return kernels::launch_pdl(fp8_gemv_kernel<true>, dim3(kernels::ceil_div(pairs, kWarps / splits / 2)),
                               dim3(kThreads), 0, stream, a, w_gate_up, w_scale, static_cast<void*>(out), m,
                               2 * intermediate, k, splits, false, false);
}

}  // namespace hichat::cuda
