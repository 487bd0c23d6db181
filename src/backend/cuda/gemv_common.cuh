// The parts of the bf16 weight-streaming GEMV kernels (gemv.cu): the launch shape, the k split of a
// row between warps, the reduction of their partial sums. (The FP8 GEMV, gemv_fp8.cu, runs on the
// tensor cores with its own tiles.) Included only by gemv.cu.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/cuda/device_info.h"
#include "backend/cuda/kernel_util.cuh"

namespace hichat::cuda::gemv_parts {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

// Each row (a pair of rows for the SwiGLU) is read by kSplits warps of one block (1, 2, 4 or 8), each
// streaming its slice of the row's k8 16-byte words: [p * chunk, (p + 1) * chunk), chunk a multiple of 32.
// Splitting k lets short matrices fill the GPU with warps (a 2048 x 2048 o-proj is 2,048 warps, a
// quarter of an H200's resident 8,448); the partial sums meet in shared memory and are added in slice
// order, so the bits depend only on (rows, k) through choose_splits() / pair_splits(), never on the
// launch.
struct Slice {
    int begin, end;
};
template <int kSplits>
__device__ __forceinline__ Slice slice_of(int k8, int part) {
    const int chunk = (k8 + 32 * kSplits - 1) / (32 * kSplits) * 32;
    return {part * chunk, min(k8, part * chunk + chunk)};
}

// The row sums of the warp group: warp sums, then (kSplits > 1) the group's slices added in order in
// shared memory. True for the one lane that holds the result (lane 0 of the group's first warp).
template <int kSplits, int kRows>
__device__ __forceinline__ bool reduce_rows(float (&sum)[kRows], float (&partial)[kWarpsPerBlock][kRows], int warp,
                                            int lane, bool live) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) sum[r] = kernels::warp_sum(sum[r]);
    if constexpr (kSplits > 1) {
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < kRows; ++r) partial[warp][r] = sum[r];
        __syncthreads();
        if (warp % kSplits != 0) return false;
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int p = 1; p < kSplits; ++p) sum[r] += partial[warp + p][r];
    }
    return live && lane == 0;
}

// Warps per row for a matrix of `weight_rows` rows of k8 16-byte words (k / 8): the
// most (up to 8) that keep every warp within one wave of resident warps and give each lane at least two 16-byte loads, and at least 2 where lanes keep
// two loads. On the H200 (132 SMs) that is 1B q|k|v 2, o 4, down 4, lm_head 2; 8B 2 for every plain
// product. Measured in the engine (2026-11-30, batch 1, alternating in one run): 1B 1.004 -> 0.904 and
// 8B 4.536 -> 4.309 ms per token against one warp per row; allowing two or four waves, or one load per
// lane, was slower (8B 4.24 / 4.42 vs 4.16, 1B 0.926 / 0.944 / 0.965 vs 0.897, another machine; two
// waves again 4.005 vs 3.913 later). The floor of 2 (8B q|k|v and lm_head, 1B lm_head; 2026-11-30,
// two device runs): 8B 3.913 -> 3.908 and, with 4 warps per gate/up pair, 3.876 -> 3.871; 1B 0.813 ->
// 0.811 and 0.808 -> 0.806. Forcing 4 for o or down (8B 3.936 / 3.924 vs 3.876), or 1 for down (3.968)
// was slower. Isolated (cuda_ops_bench, no PDL) splitting looks neutral to slightly worse: what it
// shortens is the time from pdl_wait() to the last row, which an isolated launch does not expose.
inline int choose_splits(int weight_rows, int k8) {
    const int64_t resident = int64_t{64} * std::max(cuda_num_sms(), 1);
    int splits = k8 / 2 >= 64 ? 2 : 1;
    while (splits < 8 && int64_t{weight_rows} * splits * 2 <= resident && k8 / (splits * 2) >= 64) splits *= 2;
    return splits;
}

// Launches the instance of the split count (k1, k2, k4, k8: the kernel for 1, 2, 4, 8) over `rows` rows.
template <typename... Params, typename... Args>
cudaError_t launch_split(int splits, int rows, cudaStream_t stream, void (*k1)(Params...), void (*k2)(Params...),
                         void (*k4)(Params...), void (*k8)(Params...), Args... args) {
    auto* kernel = splits == 1 ? k1 : splits == 2 ? k2 : splits == 4 ? k4 : k8;
    return kernels::launch_pdl(kernel, dim3(kernels::ceil_div(rows, kWarpsPerBlock / splits)), dim3(kThreads), 0,
                               stream, args...);
}

}  // namespace hichat::cuda::gemv_parts
