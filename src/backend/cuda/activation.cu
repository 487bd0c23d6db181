// silu_mul: the SwiGLU gate of the MLP on the fused gate_up projection (optionally an FP8 projection's
// unit-scale product, scaled as it is read). Memory-bound, 16-byte accesses.
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kThreads = 256;

// gate_up's value at column c of token t's row, first scaled where it is an FP8 unit-scale product (as
// scale_fp8_product to bf16 rounds it).
__device__ __forceinline__ float gate_up_value(const bf16* row, int c, float as, const float* w_scale) {
    const float v = __bfloat162float(row[c]);
    return w_scale == nullptr ? v : kernels::scaled_fp8_product(v, as, w_scale[c]);
}

// grid (ceil(intermediate / (8 * kThreads)), num_tokens) for vec, else (ceil(intermediate / kThreads), T).
__global__ void silu_mul_kernel(const bf16* gate_up, int intermediate, bf16* out, bool vec, const float* a_scale,
                                const float* w_scale) {
    kernels::pdl_launch_dependents();
    kernels::pdl_wait();
    const int64_t t = blockIdx.y;
    const bf16* row = gate_up + t * 2 * intermediate;
    bf16* dst = out + t * intermediate;
    const float as = a_scale != nullptr ? a_scale[t] : 1.0f;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (vec && w_scale == nullptr) {
        if (i >= intermediate / 8) return;
        float g[8], u[8], y[8];
        kernels::bf16x8_to_float(reinterpret_cast<const Bf16x8*>(row)[i], g);
        kernels::bf16x8_to_float(reinterpret_cast<const Bf16x8*>(row + intermediate)[i], u);
#pragma unroll
        for (int j = 0; j < 8; ++j) y[j] = kernels::silu(g[j]) * u[j];
        reinterpret_cast<Bf16x8*>(dst)[i] = kernels::float_to_bf16x8(y);
    } else if (vec) {
        if (i >= intermediate / 8) return;
        float y[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = 8 * i + j;
            y[j] = kernels::silu(gate_up_value(row, c, as, w_scale)) * gate_up_value(row, intermediate + c, as, w_scale);
        }
        reinterpret_cast<Bf16x8*>(dst)[i] = kernels::float_to_bf16x8(y);
    } else {
        if (i >= intermediate) return;
        dst[i] = __float2bfloat16(kernels::silu(gate_up_value(row, i, as, w_scale)) * gate_up_value(row, intermediate + i, as, w_scale));
    }
}

}  // namespace

cudaError_t silu_mul(const bf16* gate_up, int num_tokens, int intermediate, bf16* out, cudaStream_t stream,
                     const float* a_scale, const float* w_scale) {
    if (num_tokens <= 0 || intermediate <= 0)
        return num_tokens < 0 || intermediate < 0 ? cudaErrorInvalidValue : cudaSuccess;
    if ((a_scale == nullptr) != (w_scale == nullptr)) return cudaErrorInvalidValue;
    if (num_tokens > 65535) return cudaErrorInvalidValue;  // grid.y limit; a step never has this many
    const bool vec = intermediate % 8 == 0 && kernels::host_aligned16(gate_up) && kernels::host_aligned16(out);
    const int num_items = vec ? intermediate / 8 : intermediate;
    const dim3 grid(kernels::ceil_div(num_items, kThreads), num_tokens);
    return kernels::launch_pdl(silu_mul_kernel, grid, dim3(kThreads), 0, stream, gate_up, intermediate, out, vec,
                              a_scale, w_scale);
}

}  // namespace hichat::cuda
