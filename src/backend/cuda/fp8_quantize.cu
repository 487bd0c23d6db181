// The FP8 GEMM's own kernels around cuBLASLt's unit-scale product: quantize_fp8_rows before it,
// scale_fp8_product after it.
//
// quantize_fp8_rows: per-token dynamic FP8 (E4M3) quantization of a bf16 activation for the FP8
// GEMM. One block per row: the row's absolute maximum (16-byte loads, block reduction), then each
// element divided by the row's scale and converted with saturation (the hardware's satfinite
// conversion; an unclamped cast would make NaN of values past 448). The row is read twice; at the
// widths of a linear layer's input (<= 64 KiB of bf16) the second read comes from L1/L2.
#include <cuda_fp8.h>

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kThreads = 256;
constexpr float kFp8Max = 448.0f;
constexpr float kMinScale = 1.0f / (448.0f * 512.0f);   // a row of zeros gets a finite scale

__global__ void __launch_bounds__(kThreads) quantize_fp8_rows_kernel(const bf16* __restrict__ x, int k,
                                                                  uint8_t* __restrict__ q, float* __restrict__ scale) {
    __shared__ float scratch[32];
    __shared__ float row_scale;
    const int row = blockIdx.x;
    const Bf16x8* in = reinterpret_cast<const Bf16x8*>(x + static_cast<int64_t>(row) * k);
    const int words = k / 8;
    kernels::pdl_wait();
    float amax = 0.0f;
    for (int c = threadIdx.x; c < words; c += kThreads) {
        float v[8];
        kernels::bf16x8_to_float(in[c], v);
#pragma unroll
        for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
    }
    amax = kernels::warp_max(amax);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = amax;
    __syncthreads();
    if (threadIdx.x < 32) {
        float m = threadIdx.x < kThreads / 32 ? scratch[threadIdx.x] : 0.0f;
        m = kernels::warp_max(m);
        if (threadIdx.x == 0) {
            row_scale = fmaxf(m / kFp8Max, kMinScale);
            scale[row] = row_scale;
        }
    }
    __syncthreads();
    const float s = row_scale;
    uint2* out = reinterpret_cast<uint2*>(q + static_cast<int64_t>(row) * k);
    for (int c = threadIdx.x; c < words; c += kThreads) {
        float v[8];
        kernels::bf16x8_to_float(in[c], v);
        uint32_t packed[2];
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            const float2 lo = make_float2(v[4 * p] / s, v[4 * p + 1] / s), hi = make_float2(v[4 * p + 2] / s, v[4 * p + 3] / s);
            const uint32_t a = __nv_cvt_float2_to_fp8x2(lo, __NV_SATFINITE, __NV_E4M3);
            const uint32_t b = __nv_cvt_float2_to_fp8x2(hi, __NV_SATFINITE, __NV_E4M3);
            packed[p] = a | (b << 16);
        }
        out[c] = make_uint2(packed[0], packed[1]);
    }
    kernels::pdl_launch_dependents();
}

// grid (ceil(n / (kThreads * 4)), m): d[i, j] (+)= p[i, j] * a_scale[i] * w_scale[j], four columns per
// thread (n % 4 == 0).
__global__ void __launch_bounds__(kThreads) scale_fp8_product_kernel(const float* __restrict__ p,
                                                                  const float* __restrict__ a_scale,
                                                                  const float* __restrict__ w_scale, void* __restrict__ d,
                                                                  int n, bool f32_out, bool accumulate) {
    const int row = blockIdx.y, col = (blockIdx.x * kThreads + threadIdx.x) * 4;
    kernels::pdl_wait();
    if (col < n) {
        const int64_t at = static_cast<int64_t>(row) * n + col;
        const float4 v = *reinterpret_cast<const float4*>(p + at);
        const float4 ws = *reinterpret_cast<const float4*>(w_scale + col);
        const float as = a_scale[row];
        float4 r = make_float4(v.x * as * ws.x, v.y * as * ws.y, v.z * as * ws.z, v.w * as * ws.w);
        if (f32_out) {
            float4* out = reinterpret_cast<float4*>(static_cast<float*>(d) + at);
            if (accumulate) {
                const float4 o = *out;
                r = make_float4(o.x + r.x, o.y + r.y, o.z + r.z, o.w + r.w);
            }
            *out = r;
        } else {
            __nv_bfloat162* out = reinterpret_cast<__nv_bfloat162*>(static_cast<bf16*>(d) + at);
            out[0] = __floats2bfloat162_rn(r.x, r.y);
            out[1] = __floats2bfloat162_rn(r.z, r.w);
        }
    }
    kernels::pdl_launch_dependents();
}

}  // namespace

cudaError_t scale_fp8_product(const float* p, const float* a_scale, const float* w_scale, void* d, bool f32_out,
                              bool accumulate, int m, int n, cudaStream_t stream) {
    if (m == 0 || n == 0) return cudaSuccess;
    if (m < 0 || n < 0 || n % 4 != 0 || (accumulate && !f32_out) || !kernels::host_aligned16(p) ||
        !kernels::host_aligned16(w_scale) || !kernels::host_aligned(d, f32_out ? 16 : 8) || a_scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    return kernels::launch_pdl(scale_fp8_product_kernel, dim3(kernels::ceil_div(n, kThreads * 4), m), dim3(kThreads), 0,
                               stream, p, a_scale, w_scale, d, n, f32_out, accumulate);
}

cudaError_t quantize_fp8_rows(const bf16* x, int rows, int k, uint8_t* q, float* scale, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows < 0 || k <= 0 || k % 16 != 0 || !kernels::host_aligned16(x) || !kernels::host_aligned16(q) ||
        scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    return kernels::launch_pdl(quantize_fp8_rows_kernel, dim3(rows), dim3(kThreads), 0, stream, x, k, q, scale);
}

}  // namespace hichat::cuda
