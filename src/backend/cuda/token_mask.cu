// apply_token_bitmask: constrained decoding on the device. Before sampling, each masked row's
// disallowed logits become -inf; rows without a mask are left as they are. One thread per 32 tokens
// (one mask word), the row in blockIdx.y.
#include <cfloat>

#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void token_bitmask_kernel(float* logits, int vocab, const uint32_t* masks, int mask_words,
                                     const int32_t* mask_of_row) {
    const int row = blockIdx.y;
    const int m = mask_of_row[row];
    const int word = blockIdx.x * kThreads + threadIdx.x;
    if (m < 0 || word >= mask_words) return;
    const uint32_t bits = masks[static_cast<size_t>(m) * mask_words + word];
    if (bits == 0xffffffffu) return;
    float* out = logits + static_cast<size_t>(row) * vocab + static_cast<size_t>(word) * 32;
    const int n = min(32, vocab - word * 32);
    for (int i = 0; i < n; ++i) {
        if (!(bits >> i & 1u)) out[i] = -INFINITY;
    }
}

}  // namespace

cudaError_t apply_token_bitmask(float* logits, int rows, int vocab, const uint32_t* masks, int mask_words,
                                const int32_t* mask_of_row, cudaStream_t stream) {
    if (rows <= 0) return cudaSuccess;
    if (vocab <= 0 || mask_words < (vocab + 31) / 32 || rows > 65535) return cudaErrorInvalidValue;
    const dim3 grid((mask_words + kThreads - 1) / kThreads, rows);
    token_bitmask_kernel<<<grid, kThreads, 0, stream>>>(logits, vocab, masks, mask_words, mask_of_row);
    return cudaGetLastError();
}

}  // namespace hichat::cuda
