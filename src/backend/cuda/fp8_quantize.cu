// The FP8 GEMM's own kernels around cuBLASLt: quantize_fp8_rows (or rms_norm_fp8, the RMSNorm that
// makes its input) before it; silu_mul_fp8 after gate_up (the SwiGLU gate and down_proj's input
// quantization in one pass); and where cuBLASLt cannot apply the scale vectors itself (Gemm::run_fp8_unit),
// scale_fp8_product after it, or silu_mul_fp8 applying gate_up's scales as it reads the product.
//
// quantize_fp8_rows: per-token dynamic FP8 (E4M3) quantization of a bf16 activation for the FP8
// GEMM. One block per row: the row's absolute maximum (16-byte loads, block reduction), then each
// element divided by the row's scale and converted with saturation (the hardware's satfinite
// conversion; an unclamped cast would make NaN of values past 448). Every kernel here quantizes
// values that are bf16 already (the input, or rounded to bf16 as the unfused kernels write them), so a
// row of up to kCachedRowMax values is kept in shared memory as bf16 between the maximum and the codes
// and is made only once; a wider row is made twice. 2048-token prefill of the 8B on an H100
// (2026-12-07, step_timeline): silu_mul_fp8 made twice took 130 us per layer, for 117 MB of gate_up
// product and 29 MB of codes, because each making reads the 112 KiB of gate_up's weight scales again.
#include <cuda_fp8.h>

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kThreads = 256;
constexpr float kFp8Max = 448.0f;
constexpr float kMinScale = 1.0f / (448.0f * 512.0f);   // a row of zeros gets a finite scale
// bf16 values: 47 KiB, which with the kernels' static shared memory (block_max, block_sum) stays within
// the 48 KiB a launch may take without opting in.
constexpr int kCachedRowMax = 24064;

// Dynamic shared memory of a row of `width` values: the cache where it fits, else none.
size_t row_cache_bytes(int width) { return width <= kCachedRowMax ? size_t{2} * width : 0; }

// The block's maximum of each thread's `amax` (every thread gets it).
__device__ __forceinline__ float block_max(float amax) {
    __shared__ float scratch[32];
    __shared__ float result;
    amax = kernels::warp_max(amax);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = amax;
    __syncthreads();
    if (threadIdx.x < 32) {
        float m = threadIdx.x < kThreads / 32 ? scratch[threadIdx.x] : 0.0f;
        m = kernels::warp_max(m);
        if (threadIdx.x == 0) result = m;
    }
    __syncthreads();
    return result;
}

__device__ __forceinline__ float row_scale_of(float amax) { return fmaxf(amax / kFp8Max, kMinScale); }

// E4M3 codes of v[0..kN) / s, saturated, kN = 4 or 8, stored as group c of the row q.
template <int kN>
__device__ __forceinline__ void store_codes(uint8_t* q, int c, const float (&v)[kN], float s) {
    uint32_t packed[kN / 4];
#pragma unroll
    for (int p = 0; p < kN / 4; ++p) {
        const float2 lo = make_float2(v[4 * p] / s, v[4 * p + 1] / s), hi = make_float2(v[4 * p + 2] / s, v[4 * p + 3] / s);
        const uint32_t a = __nv_cvt_float2_to_fp8x2(lo, __NV_SATFINITE, __NV_E4M3);
        const uint32_t b = __nv_cvt_float2_to_fp8x2(hi, __NV_SATFINITE, __NV_E4M3);
        packed[p] = a | (b << 16);
    }
    if constexpr (kN == 8) {
        reinterpret_cast<uint2*>(q)[c] = make_uint2(packed[0], packed[1]);
    } else {
        reinterpret_cast<uint32_t*>(q)[c] = packed[0];
    }
}

// The block's row of `groups` groups of kN bf16-exact values, each made by values(c, v), quantized per
// token into q with its scale in *scale. With `cache` (dynamic shared memory of groups * kN bf16) the
// values are made once and kept there for the codes; without, they are made again.
template <int kN, typename Values>
__device__ __forceinline__ void quantize_row(const Values& values, int groups, uint8_t* q, float* scale,
                                             uint32_t* cache) {
    constexpr int kWords = kN / 2;   // bf16 pairs per group
    float amax = 0.0f;
    for (int c = threadIdx.x; c < groups; c += kThreads) {
        float v[kN];
        values(c, v);
#pragma unroll
        for (int i = 0; i < kN; ++i) amax = fmaxf(amax, fabsf(v[i]));
        if (cache != nullptr) {   // exact: the values are bf16 already
#pragma unroll
            for (int p = 0; p < kWords; ++p)
                cache[c * kWords + p] = kernels::bf16x2_bits(__floats2bfloat162_rn(v[2 * p], v[2 * p + 1]));
        }
    }
    const float s = row_scale_of(block_max(amax));   // its __syncthreads: every read and cache write before it is done
    if (threadIdx.x == 0) *scale = s;
    for (int c = threadIdx.x; c < groups; c += kThreads) {
        float v[kN];
        if (cache != nullptr) {
#pragma unroll
            for (int p = 0; p < kWords; ++p) {
                const float2 f = kernels::bf16x2_to_float2(cache[c * kWords + p]);
                v[2 * p] = f.x;
                v[2 * p + 1] = f.y;
            }
        } else {
            values(c, v);
        }
        store_codes<kN>(q, c, v, s);
    }
}

// The kernels' dynamic shared memory: the row cache, or nothing (a size of 0 from row_cache_bytes).
__device__ __forceinline__ uint32_t* row_cache(bool cached) {
    extern __shared__ uint32_t cache_words[];
    return cached ? cache_words : nullptr;
}

__global__ void __launch_bounds__(kThreads) quantize_fp8_rows_kernel(const bf16* __restrict__ x, int k,
                                                                  uint8_t* __restrict__ q, float* __restrict__ scale,
                                                                  bool cached) {
    const int row = blockIdx.x;
    const Bf16x8* in = reinterpret_cast<const Bf16x8*>(x + static_cast<int64_t>(row) * k);
    kernels::pdl_wait();
    quantize_row<8>([&](int c, float (&v)[8]) { kernels::bf16x8_to_float(in[c], v); }, k / 8,
                    q + static_cast<int64_t>(row) * k, scale + row, row_cache(cached));
    kernels::pdl_launch_dependents();
}

// Four normed values of one row, bf16-rounded as rms_norm writes them.
__device__ __forceinline__ void normed4(const float4& v, const bf16* w, int c, float inv_rms, float (&y)[4]) {
    const float2 w01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(w + 4 * c));
    const float2 w23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(w + 4 * c + 2));
    y[0] = __bfloat162float(__float2bfloat16_rn(w01.x * (v.x * inv_rms)));
    y[1] = __bfloat162float(__float2bfloat16_rn(w01.y * (v.y * inv_rms)));
    y[2] = __bfloat162float(__float2bfloat16_rn(w23.x * (v.z * inv_rms)));
    y[3] = __bfloat162float(__float2bfloat16_rn(w23.y * (v.w * inv_rms)));
}

// One block per row: the sum of squares (each thread in rms_norm's order, so the same bits), the
// normed row's maximum, then the codes; x's row is read twice (three times past the row cache), from
// L1/L2 after the first.
__global__ void __launch_bounds__(kThreads) rms_norm_fp8_kernel(const float* __restrict__ x, int dim,
                                                             const bf16* __restrict__ w, float eps,
                                                             uint8_t* __restrict__ q, float* __restrict__ q_scale,
                                                             bool cached) {
    __shared__ float scratch[32];
    kernels::pdl_launch_dependents();
    const int row = blockIdx.x;
    const float4* xr = reinterpret_cast<const float4*>(x + static_cast<int64_t>(row) * dim);
    const int n4 = dim / 4;
    kernels::pdl_wait();
    float sum_sq = 0.0f;
    for (int c = threadIdx.x; c < n4; c += kThreads) {
        const float4 v = xr[c];
        sum_sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    const float inv_rms = 1.0f / sqrtf(kernels::block_sum(sum_sq, scratch) / static_cast<float>(dim) + eps);
    quantize_row<4>([&](int c, float (&y)[4]) { normed4(xr[c], w, c, inv_rms, y); }, n4,
                    q + static_cast<int64_t>(row) * dim, q_scale + row, row_cache(cached));
}

// rms_norm_fp8 of a row held in registers (kPer float4 per thread: element c = threadIdx.x + i * kThreads
// of the row's float4 in v[i]): the sum of squares in rms_norm_fp8_kernel's order (the same bits), then
// the normed values kept in registers for the maximum and the codes. x is read once.
template <int kPer>
__device__ __forceinline__ void rms_norm_fp8_row(float4 (&v)[kPer], int dim, const bf16* __restrict__ w, float eps,
                                                 uint8_t* __restrict__ q_row, float* __restrict__ q_scale,
                                                 float* scratch) {
    const int n4 = dim / 4;
    float sum_sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i)
        if (threadIdx.x + i * kThreads < n4) sum_sq += v[i].x * v[i].x + v[i].y * v[i].y + v[i].z * v[i].z + v[i].w * v[i].w;
    const float inv_rms = 1.0f / sqrtf(kernels::block_sum(sum_sq, scratch) / static_cast<float>(dim) + eps);
    float y[kPer][4];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int c = threadIdx.x + i * kThreads;
        if (c < n4) {
            normed4(v[i], w, c, inv_rms, y[i]);
#pragma unroll
            for (int j = 0; j < 4; ++j) amax = fmaxf(amax, fabsf(y[i][j]));
        }
    }
    const float s = row_scale_of(block_max(amax));
    if (threadIdx.x == 0) *q_scale = s;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int c = threadIdx.x + i * kThreads;
        if (c < n4) store_codes<4>(q_row, c, y[i], s);
    }
}

// rms_norm_fp8 where the row fits in registers (dim <= 4 * kPer * kThreads). 2048 x 4096 on an H100
// (2026-12-07, cuda_ops_bench fp8_rows): 22.6 us against 25.0 for rms_norm_fp8_kernel.
template <int kPer>
__global__ void __launch_bounds__(kThreads) rms_norm_fp8_regs_kernel(const float* __restrict__ x, int dim,
                                                                  const bf16* __restrict__ w, float eps,
                                                                  uint8_t* __restrict__ q, float* __restrict__ q_scale) {
    __shared__ float scratch[32];
    kernels::pdl_launch_dependents();
    const int row = blockIdx.x;
    const float4* xr = reinterpret_cast<const float4*>(x + static_cast<int64_t>(row) * dim);
    kernels::pdl_wait();
    float4 v[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
        const int c = threadIdx.x + i * kThreads;
        v[i] = c < dim / 4 ? xr[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    rms_norm_fp8_row<kPer>(v, dim, w, eps, q + static_cast<int64_t>(row) * dim, q_scale + row, scratch);
}

// Eight SwiGLU outputs of one row, bf16-rounded, from word c of the gate and up halves (scaled first
// when the scales are given, rounded as scale_fp8_product to bf16 rounds).
__device__ __forceinline__ void swiglu8(const Bf16x8* gate, const Bf16x8* up, float as, const float* w_scale, int c,
                                        int intermediate, float (&y)[8]) {
    float g[8], u[8];
    kernels::bf16x8_to_float(gate[c], g);
    kernels::bf16x8_to_float(up[c], u);
    if (w_scale != nullptr) {
        const float4* wg = reinterpret_cast<const float4*>(w_scale + 8 * c);
        const float4* wu = reinterpret_cast<const float4*>(w_scale + intermediate + 8 * c);
        const float4 g0 = wg[0], g1 = wg[1], u0 = wu[0], u1 = wu[1];
        const float sg[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
        const float su[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            g[i] = kernels::scaled_fp8_product(g[i], as, sg[i]);
            u[i] = kernels::scaled_fp8_product(u[i], as, su[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) y[i] = __bfloat162float(__float2bfloat16_rn(kernels::silu(g[i]) * u[i]));
}

// One block per row: the row's SwiGLU outputs, their maximum, then their codes.
__global__ void __launch_bounds__(kThreads) silu_mul_fp8_kernel(const bf16* __restrict__ gate_up,
                                                             const float* a_scale, const float* __restrict__ w_scale,
                                                             int intermediate, uint8_t* __restrict__ q, float* q_scale,
                                                             bool cached) {
    const int row = blockIdx.x;
    const Bf16x8* gate = reinterpret_cast<const Bf16x8*>(gate_up + static_cast<int64_t>(row) * 2 * intermediate);
    const Bf16x8* up = gate + intermediate / 8;
    const int words = intermediate / 8;
    kernels::pdl_wait();
    const float as = a_scale != nullptr ? a_scale[row] : 1.0f;
    quantize_row<8>([&](int c, float (&y)[8]) { swiglu8(gate, up, as, w_scale, c, intermediate, y); }, words,
                    q + static_cast<int64_t>(row) * intermediate, q_scale + row, row_cache(cached));
    kernels::pdl_launch_dependents();
}

// grid (ceil(n / (kThreads * 4)), m): d[i, j] (+)= p[i, j] * a_scale[i] * w_scale[j], four columns per
// thread (n % 4 == 0).
__global__ void __launch_bounds__(kThreads) scale_fp8_product_kernel(const bf16* __restrict__ p,
                                                                  const float* __restrict__ a_scale,
                                                                  const float* __restrict__ w_scale, void* __restrict__ d,
                                                                  int n, bool f32_out, bool accumulate) {
    const int row = blockIdx.y, col = (blockIdx.x * kThreads + threadIdx.x) * 4;
    kernels::pdl_wait();
    if (col < n) {
        const int64_t at = static_cast<int64_t>(row) * n + col;
        const uint2 bits = *reinterpret_cast<const uint2*>(p + at);
        const float2 v01 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits.x));
        const float2 v23 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits.y));
        const float4 v = make_float4(v01.x, v01.y, v23.x, v23.y);
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

cudaError_t scale_fp8_product(const bf16* p, const float* a_scale, const float* w_scale, void* d, bool f32_out,
                              bool accumulate, int m, int n, cudaStream_t stream) {
    if (m == 0 || n == 0) return cudaSuccess;
    if (m < 0 || n < 0 || n % 4 != 0 || (accumulate && !f32_out) || !kernels::host_aligned(p, 8) ||
        !kernels::host_aligned16(w_scale) || !kernels::host_aligned(d, f32_out ? 16 : 8) || a_scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    return kernels::launch_pdl(scale_fp8_product_kernel, dim3(kernels::ceil_div(n, kThreads * 4), m), dim3(kThreads), 0,
                               stream, p, a_scale, w_scale, d, n, f32_out, accumulate);
}

cudaError_t silu_mul_fp8(const bf16* gate_up, const float* a_scale, const float* w_scale, int num_tokens,
                         int intermediate, uint8_t* q, float* q_scale, cudaStream_t stream) {
    if (num_tokens == 0) return cudaSuccess;
    if (num_tokens < 0 || intermediate <= 0 || intermediate % 16 != 0 || (a_scale == nullptr) != (w_scale == nullptr) ||
        !kernels::host_aligned16(gate_up) || !kernels::host_aligned16(q) || !kernels::host_aligned16(w_scale) ||
        q_scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    const size_t cache = row_cache_bytes(intermediate);
    return kernels::launch_pdl(silu_mul_fp8_kernel, dim3(num_tokens), dim3(kThreads), cache, stream, gate_up, a_scale,
                               w_scale, intermediate, q, q_scale, cache != 0);
}

cudaError_t rms_norm_fp8(const float* x, int rows, int dim, const bf16* w, float eps, uint8_t* q, float* q_scale,
                         cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows < 0 || dim <= 0 || dim % 4 != 0 || !kernels::host_aligned16(x) || !kernels::host_aligned(w, 8) ||
        !kernels::host_aligned(q, 4) || q_scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    if (dim <= 16 * kThreads) {
        return kernels::launch_pdl(rms_norm_fp8_regs_kernel<4>, dim3(rows), dim3(kThreads), 0, stream, x, dim, w, eps, q,
                                   q_scale);
    }
    if (dim <= 32 * kThreads) {
        return kernels::launch_pdl(rms_norm_fp8_regs_kernel<8>, dim3(rows), dim3(kThreads), 0, stream, x, dim, w, eps, q,
                                   q_scale);
    }
    const size_t cache = row_cache_bytes(dim);
    return kernels::launch_pdl(rms_norm_fp8_kernel, dim3(rows), dim3(kThreads), cache, stream, x, dim, w, eps, q, q_scale,
                               cache != 0);
}

cudaError_t quantize_fp8_rows(const bf16* x, int rows, int k, uint8_t* q, float* scale, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (rows < 0 || k <= 0 || k % 16 != 0 || !kernels::host_aligned16(x) || !kernels::host_aligned16(q) ||
        scale == nullptr) {
        return cudaErrorInvalidValue;
    }
    const size_t cache = row_cache_bytes(k);
    return kernels::launch_pdl(quantize_fp8_rows_kernel, dim3(rows), dim3(kThreads), cache, stream, x, k, q, scale,
                               cache != 0);
}

}  // namespace hichat::cuda
