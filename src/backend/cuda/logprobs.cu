// row_logprobs: the OpenAI logprobs of device-sampled rows (sampling/logprobs.h has the rule and the CPU
// version): log_softmax of the row's fp32 logits, the chosen token's value and the num_top largest.
// One block of 256 threads per row: a max and a sum of exp over the row (NaN skipped), then each thread
// keeps its num_top best of its strided part in a sorted list, and num_top rounds of a block-wide best
// of the lists' heads take the winners in order (value descending, index ascending).
#include <cfloat>

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kNoIndex = 0x7fffffff;

struct Entry {
    float value;
    int index;
};

// a before b: larger value, then lower index; NaN is never before anything (callers skip it).
__device__ __forceinline__ bool before(float va, int ia, float vb, int ib) {
    return va > vb || (va == vb && ia < ib);
}

__device__ __forceinline__ Entry warp_first(Entry e) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float v = __shfl_xor_sync(kernels::kFullMask, e.value, offset);
        const int i = __shfl_xor_sync(kernels::kFullMask, e.index, offset);
        if (before(v, i, e.value, e.index)) e = {v, i};
    }
    return e;
}

__device__ __forceinline__ Entry block_first(Entry e, Entry* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    e = warp_first(e);
    if (lane == 0) scratch[warp] = e;
    __syncthreads();
    e = lane < kThreads / 32 ? scratch[lane] : Entry{-INFINITY, kNoIndex};
    e = warp_first(e);
    __syncthreads();
    return e;
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = kernels::warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = kernels::warp_max(lane < kThreads / 32 ? scratch[lane] : -INFINITY);
    __syncthreads();
    return v;
}

__global__ void __launch_bounds__(kThreads) row_logprobs_kernel(const float* logits, int vocab, const int32_t* chosen,
                                                                int num_top, RowLogprobsOut* out) {
    __shared__ float scratch[32];
    __shared__ Entry entries[32];
    const float* row = logits + static_cast<size_t>(blockIdx.x) * vocab;

    float mx = -INFINITY;
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
        const float v = row[i];
        if (!isnan(v)) mx = fmaxf(mx, v);
    }
    mx = block_max(mx, scratch);
    float sum = 0;
    if (mx > -INFINITY) {
        for (int i = threadIdx.x; i < vocab; i += kThreads) {
            const float v = row[i];
            if (!isnan(v)) sum += __expf(v - mx);
        }
    }
    sum = kernels::block_sum(sum, scratch);
    const bool finite = mx > -INFINITY && mx < INFINITY;
    const float lse = finite ? mx + logf(sum) : 0.0f;
    auto logprob = [&](float v) { return finite ? v - lse : -INFINITY; };

    // This thread's num_top best, sorted: most come from one pass with no insertion at all.
    float top_v[kMaxTopLogprobsDevice];
    int top_i[kMaxTopLogprobsDevice];
    int n = 0;
    for (int i = threadIdx.x; i < vocab && num_top > 0; i += kThreads) {
        const float v = row[i];
        if (isnan(v) || (n == num_top && !before(v, i, top_v[n - 1], top_i[n - 1]))) continue;
        int at = n < num_top ? n : num_top - 1;
        while (at > 0 && before(v, i, top_v[at - 1], top_i[at - 1])) {
            top_v[at] = top_v[at - 1];
            top_i[at] = top_i[at - 1];
            --at;
        }
        top_v[at] = v;
        top_i[at] = i;
        if (n < num_top) ++n;
    }
    RowLogprobsOut& o = out[blockIdx.x];
    int head = 0, taken = 0;
    for (int k = 0; k < num_top; ++k) {
        const Entry mine = head < n ? Entry{top_v[head], top_i[head]} : Entry{-INFINITY, kNoIndex};
        const Entry best = block_first(mine, entries);
        if (best.index == kNoIndex) break;  // fewer non-NaN tokens than num_top
        if (threadIdx.x == 0) {
            o.top_ids[k] = best.index;
            o.top_logprobs[k] = logprob(best.value);
        }
        if (head < n && top_i[head] == best.index) ++head;
        ++taken;
    }
    if (threadIdx.x == 0) {
        o.num_top = taken;
        o.chosen = logprob(row[chosen[blockIdx.x]]);
    }
}

}  // namespace

cudaError_t row_logprobs(const float* logits, int rows, int vocab, const int32_t* chosen, int num_top,
                         RowLogprobsOut* out, cudaStream_t stream) {
    if (rows <= 0) return cudaSuccess;
    if (num_top < 0 || num_top > kMaxTopLogprobsDevice || vocab <= 0) return cudaErrorInvalidValue;
    row_logprobs_kernel<<<rows, kThreads, 0, stream>>>(logits, vocab, chosen, num_top, out);
    return cudaGetLastError();
}

}  // namespace hichat::cuda
