// Small device helpers shared by the .cu files: warp/block reductions and 16-byte bf16 vectors.
// Included only by .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace hichat::cuda::kernels {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024). Every thread gets the result.
// `scratch` holds 32 floats; the call ends with a barrier so scratch may be reused right after.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    const int num_warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = lane < num_warps ? scratch[lane] : 0.0f;
    total = warp_sum(total);
    __syncthreads();
    return total;
}

// Eight bf16 in one 16-byte load/store.
struct alignas(16) Bf16x8 {
    __nv_bfloat162 h[4];
};

__device__ __forceinline__ void bf16x8_to_float(const Bf16x8& v, float* out) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(v.h[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ Bf16x8 float_to_bf16x8(const float* in) {
    Bf16x8 v;
#pragma unroll
    for (int i = 0; i < 4; ++i) v.h[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    return v;
}

__device__ __forceinline__ bool is_aligned16(const void* p) {
    return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

inline bool host_aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace hichat::cuda::kernels
