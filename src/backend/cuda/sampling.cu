// argmax_rows: greedy sampling over fp32 logits. One block per row; NaN never wins; ties go to the
// lowest index; a row with no number above -inf answers 0.
#include <cfloat>

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kNoIndex = 0x7fffffff;

struct Best {
    float value;
    int index;
};

__device__ __forceinline__ void take(Best& best, float v, int i) {
    if (v > best.value || (v == best.value && i < best.index)) best = {v, i};
}

__device__ __forceinline__ Best warp_best(Best b) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float v = __shfl_xor_sync(kernels::kFullMask, b.value, offset);
        const int i = __shfl_xor_sync(kernels::kFullMask, b.index, offset);
        take(b, v, i);
    }
    return b;
}

__global__ void argmax_kernel(const float* logits, int vocab, int32_t* out, bool vec) {
    __shared__ Best scratch[32];
    const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
    Best best{-INFINITY, kNoIndex};
    if (vec) {
        // Each thread visits increasing indices, so `>` alone keeps the lowest index per thread.
        for (int c = threadIdx.x; c < vocab / 4; c += blockDim.x) {
            const float4 v = reinterpret_cast<const float4*>(row)[c];
            take(best, v.x, 4 * c);
            take(best, v.y, 4 * c + 1);
            take(best, v.z, 4 * c + 2);
            take(best, v.w, 4 * c + 3);
        }
    } else {
        for (int i = threadIdx.x; i < vocab; i += blockDim.x) take(best, row[i], i);
    }
    best = warp_best(best);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) scratch[warp] = best;
    __syncthreads();
    if (warp == 0) {
        best = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : Best{-INFINITY, kNoIndex};
        best = warp_best(best);
        if (lane == 0) out[blockIdx.x] = best.index == kNoIndex ? 0 : best.index;
    }
}

}  // namespace

cudaError_t argmax_rows(const float* logits, int rows, int vocab, int32_t* out, cudaStream_t stream) {
    if (rows <= 0) return rows < 0 ? cudaErrorInvalidValue : cudaSuccess;
    if (vocab <= 0) return cudaErrorInvalidValue;
    const bool vec = vocab % 4 == 0 && kernels::host_aligned16(logits);
    argmax_kernel<<<rows, kThreads, 0, stream>>>(logits, vocab, out, vec);
    return cudaGetLastError();
}

}  // namespace hichat::cuda
