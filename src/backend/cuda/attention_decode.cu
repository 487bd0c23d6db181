// The decode kernel over a bf16 KV cache (attention_decode.cuh).
#include "backend/cuda/attention_decode.cuh"

namespace hichat::cuda::attn {

cudaError_t launch_decode(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    return decode::launch</*kFp8=*/false>(a, split, stream);
}

}  // namespace hichat::cuda::attn
