// The prefill kernel over an FP8 (E4M3) KV cache (attention_prefill.cuh).
#include "backend/cuda/attention_prefill.cuh"

namespace hichat::cuda::attn {

cudaError_t launch_prefill_fp8(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream) {
    return prefill::launch</*kFp8=*/true>(a, max_seq_len_q, stream);
}

}  // namespace hichat::cuda::attn
