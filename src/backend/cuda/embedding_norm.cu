// Row ops on the residual stream: embedding lookup, RMSNorm, row gather, bias add.
// Memory-bound: one block per row, 16-byte accesses when the row width and pointers allow it.
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;

constexpr int kRowThreads = 256;

// out[row, :] = float(table[ids[row], :]).   vec: hidden % 8 == 0 and 16-byte aligned table/out rows.
__global__ void embedding_kernel(const int32_t* ids, const int32_t* prev_ids, const bf16* table, int hidden,
                                 float* out, bool vec) {
    const int row = blockIdx.x;
    const int32_t id = ids[row] >= 0 ? ids[row] : prev_ids[-ids[row] - 1];
    const bf16* src = table + static_cast<int64_t>(id) * hidden;
    float* dst = out + static_cast<int64_t>(row) * hidden;
    if (vec) {
        for (int c = threadIdx.x; c < hidden / 8; c += blockDim.x) {
            const Bf16x8 v = reinterpret_cast<const Bf16x8*>(src)[c];
            float f[8];
            kernels::bf16x8_to_float(v, f);
            reinterpret_cast<float4*>(dst)[2 * c] = make_float4(f[0], f[1], f[2], f[3]);
            reinterpret_cast<float4*>(dst)[2 * c + 1] = make_float4(f[4], f[5], f[6], f[7]);
        }
    } else {
        for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
    }
}

// out = bf16(w * (x * inv_rms)) in the order of the CPU reference. vec: dim % 4 == 0, aligned rows.
// Rows of at most 4 * kNormVecs * blockDim floats (4096 at 256 threads) stay in registers: the weight
// loads go out before pdl_wait() (weights are constant) and x is read once, all at once (a one-row
// norm was four round trips: 3.9 us at batch 1). Each thread adds its squares in the same order either
// way, so both paths give the same bits.
constexpr int kNormVecs = 4;

__device__ __forceinline__ float sum_squares(const float4& v) { return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w; }

__device__ __forceinline__ void store_normed(const float4& v, __nv_bfloat162 w01, __nv_bfloat162 w23, float inv_rms,
                                             __nv_bfloat162* dst) {
    const float2 fw01 = __bfloat1622float2(w01), fw23 = __bfloat1622float2(w23);
    dst[0] = __floats2bfloat162_rn(fw01.x * (v.x * inv_rms), fw01.y * (v.y * inv_rms));
    dst[1] = __floats2bfloat162_rn(fw23.x * (v.z * inv_rms), fw23.y * (v.w * inv_rms));
}

__global__ void rms_norm_kernel(const float* x, int dim, const bf16* w, float eps, bf16* out, bool vec) {
    __shared__ float scratch[32];
    kernels::pdl_launch_dependents();
    const int row = blockIdx.x;
    const float* xr = x + static_cast<int64_t>(row) * dim;
    bf16* yr = out + static_cast<int64_t>(row) * dim;
    const __nv_bfloat162* w2 = reinterpret_cast<const __nv_bfloat162*>(w);
    const int n4 = dim / 4;
    if (vec && n4 <= kNormVecs * static_cast<int>(blockDim.x)) {
        __nv_bfloat162 w01[kNormVecs], w23[kNormVecs];
        float4 v[kNormVecs];
#pragma unroll
        for (int u = 0; u < kNormVecs; ++u) {
            const int c = threadIdx.x + u * static_cast<int>(blockDim.x);
            if (c < n4) w01[u] = w2[2 * c], w23[u] = w2[2 * c + 1];
        }
        kernels::pdl_wait();
#pragma unroll
        for (int u = 0; u < kNormVecs; ++u) {
            const int c = threadIdx.x + u * static_cast<int>(blockDim.x);
            if (c < n4) v[u] = reinterpret_cast<const float4*>(xr)[c];
        }
        float sum_sq = 0.0f;
#pragma unroll
        for (int u = 0; u < kNormVecs; ++u)
            if (threadIdx.x + u * static_cast<int>(blockDim.x) < n4) sum_sq += sum_squares(v[u]);
        const float inv_rms = 1.0f / sqrtf(kernels::block_sum(sum_sq, scratch) / static_cast<float>(dim) + eps);
#pragma unroll
        for (int u = 0; u < kNormVecs; ++u) {
            const int c = threadIdx.x + u * static_cast<int>(blockDim.x);
            if (c < n4) store_normed(v[u], w01[u], w23[u], inv_rms, reinterpret_cast<__nv_bfloat162*>(yr) + 2 * c);
        }
        return;
    }
    kernels::pdl_wait();
    float sum_sq = 0.0f;
    if (vec) {
        for (int c = threadIdx.x; c < n4; c += blockDim.x) sum_sq += sum_squares(reinterpret_cast<const float4*>(xr)[c]);
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) sum_sq += xr[i] * xr[i];
    }
    const float mean = kernels::block_sum(sum_sq, scratch) / static_cast<float>(dim);
    const float inv_rms = 1.0f / sqrtf(mean + eps);
    if (vec) {
        for (int c = threadIdx.x; c < n4; c += blockDim.x)
            store_normed(reinterpret_cast<const float4*>(xr)[c], w2[2 * c], w2[2 * c + 1], inv_rms,
                         reinterpret_cast<__nv_bfloat162*>(yr) + 2 * c);
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x)
            yr[i] = __float2bfloat16(__bfloat162float(w[i]) * (xr[i] * inv_rms));
    }
}

__global__ void gather_rows_kernel(const float* x, const int32_t* rows, int dim, float* out, bool vec) {
    kernels::pdl_launch_dependents();
    kernels::pdl_wait();
    const float* src = x + static_cast<int64_t>(rows[blockIdx.x]) * dim;
    float* dst = out + static_cast<int64_t>(blockIdx.x) * dim;
    if (vec) {
        for (int c = threadIdx.x; c < dim / 4; c += blockDim.x)
            reinterpret_cast<float4*>(dst)[c] = reinterpret_cast<const float4*>(src)[c];
    } else {
        for (int i = threadIdx.x; i < dim; i += blockDim.x) dst[i] = src[i];
    }
}

__global__ void add_bias_kernel(bf16* x, const bf16* bias, int cols) {
    bf16* row = x + static_cast<int64_t>(blockIdx.x) * cols;
    for (int i = threadIdx.x; i < cols; i += blockDim.x)
        row[i] = __float2bfloat16(__bfloat162float(row[i]) + __bfloat162float(bias[i]));
}

}  // namespace

cudaError_t embedding(const int32_t* ids, const int32_t* prev_ids, int num_tokens, const bf16* table, int hidden,
                      float* out, cudaStream_t stream) {
    if (num_tokens <= 0 || hidden <= 0) return num_tokens < 0 || hidden < 0 ? cudaErrorInvalidValue : cudaSuccess;
    const bool vec = hidden % 8 == 0 && kernels::host_aligned16(table) && kernels::host_aligned16(out);
    embedding_kernel<<<num_tokens, kRowThreads, 0, stream>>>(ids, prev_ids, table, hidden, out, vec);
    return cudaGetLastError();
}

cudaError_t rms_norm(const float* x, int rows, int dim, const bf16* w, float eps, bf16* out, cudaStream_t stream) {
    if (rows <= 0 || dim <= 0) return rows < 0 || dim < 0 ? cudaErrorInvalidValue : cudaSuccess;
    // float4 of x, two bf16x2 of w and out: 16-byte x rows, 8-byte w and out rows.
    const bool vec = dim % 4 == 0 && kernels::host_aligned16(x) && kernels::host_aligned(w, 8) &&
                     kernels::host_aligned(out, 8);
    return kernels::launch_pdl(rms_norm_kernel, dim3(rows), dim3(kRowThreads), 0, stream, x, dim, w, eps, out, vec);
}

cudaError_t gather_rows(const float* x, const int32_t* rows, int num_rows, int dim, float* out, cudaStream_t stream) {
    if (num_rows <= 0 || dim <= 0) return num_rows < 0 || dim < 0 ? cudaErrorInvalidValue : cudaSuccess;
    const bool vec = dim % 4 == 0 && kernels::host_aligned16(x) && kernels::host_aligned16(out);
    return kernels::launch_pdl(gather_rows_kernel, dim3(num_rows), dim3(kRowThreads), 0, stream, x, rows, dim, out, vec);
}

cudaError_t add_bias_bf16(bf16* x, const bf16* bias, int rows, int cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return rows < 0 || cols < 0 ? cudaErrorInvalidValue : cudaSuccess;
    add_bias_kernel<<<rows, kRowThreads, 0, stream>>>(x, bias, cols);
    return cudaGetLastError();
}

}  // namespace hichat::cuda
