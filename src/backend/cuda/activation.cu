// silu_mul: the SwiGLU gate of the MLP on the fused gate_up projection. Memory-bound, 16-byte accesses.
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kThreads = 256;

// grid (ceil(intermediate / (8 * kThreads)), num_tokens) for vec, else (ceil(intermediate / kThreads), T).
__global__ void silu_mul_kernel(const bf16* gate_up, int intermediate, bf16* out, bool vec) {
    kernels::pdl_launch_dependents();
    kernels::pdl_wait();
    const int64_t t = blockIdx.y;
    const bf16* gate = gate_up + t * 2 * intermediate;
    const bf16* up = gate + intermediate;
    bf16* dst = out + t * intermediate;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (vec) {
        if (i >= intermediate / 8) return;
        float g[8], u[8], y[8];
        kernels::bf16x8_to_float(reinterpret_cast<const Bf16x8*>(gate)[i], g);
        kernels::bf16x8_to_float(reinterpret_cast<const Bf16x8*>(up)[i], u);
#pragma unroll
        for (int j = 0; j < 8; ++j) y[j] = kernels::silu(g[j]) * u[j];
        reinterpret_cast<Bf16x8*>(dst)[i] = kernels::float_to_bf16x8(y);
    } else {
        if (i >= intermediate) return;
        dst[i] = __float2bfloat16(kernels::silu(__bfloat162float(gate[i])) * __bfloat162float(up[i]));
    }
}

}  // namespace

cudaError_t silu_mul(const bf16* gate_up, int num_tokens, int intermediate, bf16* out, cudaStream_t stream) {
    if (num_tokens <= 0 || intermediate <= 0)
        return num_tokens < 0 || intermediate < 0 ? cudaErrorInvalidValue : cudaSuccess;
    if (num_tokens > 65535) return cudaErrorInvalidValue;  // grid.y limit; a step never has this many
    const bool vec = intermediate % 8 == 0 && kernels::host_aligned16(gate_up) && kernels::host_aligned16(out);
    const int num_items = vec ? intermediate / 8 : intermediate;
    const dim3 grid(kernels::ceil_div(num_items, kThreads), num_tokens);
    return kernels::launch_pdl(silu_mul_kernel, grid, dim3(kThreads), 0, stream, gate_up, intermediate, out, vec);
}

}  // namespace hichat::cuda
