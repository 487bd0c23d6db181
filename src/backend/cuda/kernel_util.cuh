// Small device helpers shared by the .cu files: warp/block reductions and 16-byte bf16 vectors.
// Included only by .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

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

// A bf16 pair as the 32-bit word a register or shared memory holds, and back.
__device__ __forceinline__ uint32_t bf16x2_bits(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }
__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t bits) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
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

// Host side: p is a multiple of `bytes` (a power of two); null counts as aligned.
inline bool host_aligned(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }
inline bool host_aligned16(const void* p) { return host_aligned(p, 16); }

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The SwiGLU gate's SiLU, shared by silu_mul and the fused gate/up GEMV so that both round alike.
__device__ __forceinline__ float silu(float g) { return g / (1.0f + __expf(-g)); }

// An FP8 unit-scale product's value p with its row and column scales applied and rounded to bf16, as
// scale_fp8_product writes it: the kernels that apply the scales as they read the product (RoPE,
// silu_mul, silu_mul_fp8) round alike through this.
__device__ __forceinline__ float scaled_fp8_product(float p, float row_scale, float col_scale) {
    return __bfloat162float(__float2bfloat16_rn(p * row_scale * col_scale));
}

// Programmatic dependent launch (sm_90). A kernel started by launch_pdl() may begin while the kernel
// before it on the stream still runs: it first lets its own successor start (pdl_launch_dependents),
// may read constant inputs (weights), and calls pdl_wait() before anything else: from there on it sees
// all that the earlier kernels wrote and they are done reading, exactly as after an ordinary launch.
// Both instructions are no-ops in a kernel launched the ordinary way.
__device__ __forceinline__ void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

inline bool pdl_enabled() {   // HICHAT_PDL=0 launches ordinarily (measurement)
    static const bool enabled = [] {
        const char* v = std::getenv("HICHAT_PDL");
        return v == nullptr || v[0] != '0';
    }();
    return enabled;
}

template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       Args... args) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = pdl_enabled() ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

}  // namespace hichat::cuda::kernels
