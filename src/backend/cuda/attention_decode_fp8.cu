// The decode kernel over an FP8 (E4M3) KV cache (attention_decode.cuh).
#include "backend/cuda/attention_decode.cuh"

namespace hichat::cuda::attn {

cudaError_t launch_decode_fp8(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    return decode::launch</*kFp8=*/true>(a, split, stream);
}

int decode_blocks_per_sm_fp8(int head_dim) { return decode::blocks_per_sm</*kFp8=*/true>(head_dim); }

}  // namespace hichat::cuda::attn
