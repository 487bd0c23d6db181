// paged_attention(): checks the arguments, plans the decode split over the workspace, and hands the
// batch to the decode kernel (every sequence has at most one new token) or the prefill kernel.
#include <algorithm>

#include "backend/cuda/attention_launch.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

constexpr int kMinKeysPerSplit = 256;   // shorter splits cost more in the combine than they save
constexpr int kMaxSplits = 16;
constexpr int kSplitKeyQuantum = 128;   // a decode block takes 4 warps x 32 keys per round
constexpr float kLog2e = 1.4426950408889634f;

int max_splits_for(int max_seq_len_kv) {
    return std::clamp(kernels::ceil_div(std::max(max_seq_len_kv, 1), kMinKeysPerSplit), 1, kMaxSplits);
}

size_t split_workspace_bytes(int num_tokens, int num_heads, int head_dim, int num_splits) {
    if (num_splits <= 1) return 0;
    return sizeof(float) * static_cast<size_t>(num_tokens) * num_heads * num_splits * (head_dim + 1);
}

// Enough blocks for about two waves of the device, no split shorter than kMinKeysPerSplit, and no
// more partials than the workspace holds.
attn::DecodeSplit plan_decode_split(const AttentionMetadata& meta, int num_heads, int num_kv_heads, int head_dim,
                                    void* workspace, size_t workspace_bytes) {
    attn::DecodeSplit split;
    const int group_size = num_heads / num_kv_heads;
    const int num_blocks = meta.num_seqs * num_kv_heads * kernels::ceil_div(group_size, 8);
    const int num_sms = std::max(cuda_num_sms(), 1);
    int num_splits = std::min(max_splits_for(meta.max_seq_len_kv), kernels::ceil_div(2 * num_sms, num_blocks));
    while (num_splits > 1 && split_workspace_bytes(meta.num_tokens, num_heads, head_dim, num_splits) > workspace_bytes)
        --num_splits;
    if (workspace == nullptr) num_splits = 1;
    const int max_len = std::max(meta.max_seq_len_kv, 1);
    split.keys_per_split = kernels::ceil_div(kernels::ceil_div(max_len, num_splits), kSplitKeyQuantum) * kSplitKeyQuantum;
    split.num_splits = kernels::ceil_div(max_len, split.keys_per_split);
    if (split.num_splits > 1) {
        split.partial_o = static_cast<float*>(workspace);
        split.partial_lse = split.partial_o + static_cast<size_t>(meta.num_tokens) * num_heads * split.num_splits * head_dim;
    }
    return split;
}

}  // namespace

size_t attention_workspace_bytes(int max_num_tokens, int num_heads, int head_dim, int max_seq_len_kv) {
    return split_workspace_bytes(max_num_tokens, num_heads, head_dim, max_splits_for(max_seq_len_kv));
}

cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache, const AttentionMetadata& meta,
                            int num_heads, int num_kv_heads, int head_dim, int block_size, float scale, bf16* out,
                            void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (meta.num_seqs < 0 || meta.num_tokens < 0) return cudaErrorInvalidValue;
    if (meta.num_seqs == 0 || meta.num_tokens == 0) return cudaSuccess;
    if ((head_dim != 64 && head_dim != 128) || num_kv_heads <= 0 || num_heads % num_kv_heads != 0 ||
        block_size <= 0 || meta.max_seq_len_q <= 0)
        return cudaErrorInvalidValue;
    if (!kernels::host_aligned16(k_cache) || !kernels::host_aligned16(v_cache) ||
        (reinterpret_cast<uintptr_t>(out) & 3u) != 0)
        return cudaErrorMisalignedAddress;
    attn::AttnArgs a;
    a.q = q;
    a.k_cache = k_cache;
    a.v_cache = v_cache;
    a.cu_seqlens_q = meta.cu_seqlens_q;
    a.seq_lens_kv = meta.seq_lens_kv;
    a.block_tables = meta.block_tables;
    a.max_blocks_per_seq = meta.max_blocks_per_seq;
    a.num_seqs = meta.num_seqs;
    a.num_heads = num_heads;
    a.num_kv_heads = num_kv_heads;
    a.head_dim = head_dim;
    a.block_size = block_size;
    a.scale_log2 = scale * kLog2e;
    a.out = out;
    if (meta.max_seq_len_q == 1) {
        const attn::DecodeSplit split =
            plan_decode_split(meta, num_heads, num_kv_heads, head_dim, workspace, workspace_bytes);
        return attn::launch_decode(a, split, stream);
    }
    return attn::launch_prefill(a, meta.max_seq_len_q, stream);
}

}  // namespace hichat::cuda
