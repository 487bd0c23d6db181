// The decode kernel over a bf16 KV cache (attention_decode.cuh).
#include "backend/cuda/attention_decode.cuh"

namespace hichat::cuda::attn {

cudaError_t launch_decode(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    return decode::launch</*kFp8=*/false>(a, split, stream);
}

int decode_blocks_per_sm(int head_dim) { return decode::blocks_per_sm</*kFp8=*/false>(head_dim); }

}  // namespace hichat::cuda::attn
