// paged_attention() and paged_attention_fp8(): check the arguments, plan the decode split over the
// workspace, and hand the batch to the decode kernel (sequences with one new token) and the prefill
// kernel (the others), of the cache's type. In a
// mixed batch (chunked prefills beside decoding sequences) a decode row in the prefill kernel would
// take a whole 64-row tile per KV head for its group of query rows.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_launch.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

// Shorter splits cost more in the combine than they save. Splits of 64 keys and more whose blocks
// meet in a cluster (distributed shared memory, no combine_kernel) for small batches were slower too:
// 8B FP8 batch 1 3.59 against 3.50 ms per token, batch 8 4.17 against 3.74 (H100, 2026-12-07 e).
constexpr int kMinKeysPerSplit = 256;
constexpr int kMaxSplits = 64;          // at most kMaxCombineSplits (attention_decode.cu)
constexpr int kSplitKeyQuantum = 128;   // a decode block's 4 warps take 16-key tiles in turn
constexpr int kMaxTokenSplits = 1024;   // partial rows (tokens x splits) the workspace holds at most
constexpr int kDecodeRows = 16;         // query heads one decode block carries (attention_decode.cu)
constexpr int kSplitOverheadKeys = 128; // per-block cost outside the key loop (prologue, merge), in keys
constexpr float kLog2e = 1.4426950408889634f;

int max_splits_for(int max_seq_len_kv) {
    return std::clamp(kernels::ceil_div(std::max(max_seq_len_kv, 1), kMinKeysPerSplit), 1, kMaxSplits);
}

size_t split_workspace_bytes(int num_tokens, int num_heads, int head_dim, int num_splits) {
    if (num_splits <= 1) return 0;
    return sizeof(float) * static_cast<size_t>(num_tokens) * num_heads * num_splits * (head_dim + 1);
}

int keys_per_split_for(int max_len, int num_splits) {
    return kernels::ceil_div(kernels::ceil_div(max_len, num_splits), kSplitKeyQuantum) * kSplitKeyQuantum;
}

// Estimated time of a split count, in key-steps of one block: full waves of resident blocks times the
// keys of one block plus its fixed cost. A wave only partly filled costs a whole one.
int64_t split_cost(int base_blocks, int capacity, int max_len, int num_splits) {
    const int keys = keys_per_split_for(max_len, num_splits);
    const int64_t blocks = static_cast<int64_t>(base_blocks) * kernels::ceil_div(max_len, keys);
    const int64_t waves = (blocks + capacity - 1) / capacity;
    return waves * (keys + kSplitOverheadKeys) + (num_splits > 1 ? kSplitOverheadKeys : 0);
}

// The split count with the lowest split_cost (fewest splits on ties), no split shorter than
// kMinKeysPerSplit, and no more partials than the workspace holds. Depends only on the batch shape
// and max_seq_len_kv, never on the actual lengths (CUDA-graph replay).
attn::DecodeSplit plan_decode_split(const AttentionMetadata& meta, int num_heads, int num_kv_heads, int head_dim,
                                    bool kv_fp8, void* workspace, size_t workspace_bytes) {
    const int group_size = num_heads / num_kv_heads;
    const int base_blocks = meta.num_seqs * num_kv_heads * kernels::ceil_div(group_size, kDecodeRows);
    const int blocks_per_sm = kv_fp8 ? attn::decode_blocks_per_sm_fp8(head_dim) : attn::decode_blocks_per_sm(head_dim);
    const int capacity = blocks_per_sm * std::max(cuda_num_sms(), 1);
    const int max_len = std::max(meta.max_seq_len_kv, 1);
    int best = 1;
    if (workspace != nullptr) {
        int64_t best_cost = split_cost(base_blocks, capacity, max_len, 1);
        const int limit = std::min(max_splits_for(max_len), kMaxTokenSplits / std::max(meta.num_tokens, 1));
        for (int n = 2; n <= limit; ++n) {
            if (split_workspace_bytes(meta.num_tokens, num_heads, head_dim, n) > workspace_bytes) break;
            const int64_t cost = split_cost(base_blocks, capacity, max_len, n);
            if (cost < best_cost) {
                best = n;
                best_cost = cost;
            }
        }
    }
    attn::DecodeSplit split;
    split.keys_per_split = keys_per_split_for(max_len, best);
    split.num_splits = kernels::ceil_div(max_len, split.keys_per_split);
    if (split.num_splits > 1) {
        split.partial_o = static_cast<float*>(workspace);
        split.partial_lse = split.partial_o + static_cast<size_t>(meta.num_tokens) * num_heads * split.num_splits * head_dim;
    }
    return split;
}

}  // namespace

size_t attention_workspace_bytes(int max_num_tokens, int num_heads, int head_dim, int max_seq_len_kv) {
    const int max_splits = max_splits_for(max_seq_len_kv);
    if (max_splits <= 1 || max_num_tokens <= 0) return 0;
    const int64_t rows = std::min<int64_t>(static_cast<int64_t>(max_num_tokens) * max_splits, kMaxTokenSplits);
    return sizeof(float) * static_cast<size_t>(rows) * num_heads * (head_dim + 1);
}

namespace {

// Checks what both caches share, builds the kernels' arguments, and runs the decode kernel (sequences
// with one new token) and the prefill kernel (the others).
cudaError_t run_attention(const bf16* q, const void* k_cache, const void* v_cache, bool kv_fp8,
                          const AttentionMetadata& meta, int num_heads, int num_kv_heads, int head_dim, int block_size,
                          float scale_log2, float out_scale, bf16* out, void* workspace, size_t workspace_bytes,
                          cudaStream_t stream) {
    if (meta.num_seqs < 0 || meta.num_tokens < 0) return cudaErrorInvalidValue;
    if (meta.num_seqs == 0 || meta.num_tokens == 0) return cudaSuccess;
    if ((head_dim != 64 && head_dim != 80 && head_dim != 96 && head_dim != 128 && head_dim != 256) || num_kv_heads <= 0 || num_heads % num_kv_heads != 0 ||
        block_size <= 0 || meta.max_seq_len_q <= 0)
        return cudaErrorInvalidValue;
    if (!kernels::host_aligned16(k_cache) || !kernels::host_aligned16(v_cache) ||
        !kernels::host_aligned(out, 4))
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
    a.kv_fp8 = kv_fp8;
    a.scale_log2 = scale_log2;
    a.out_scale = out_scale;
    a.out = out;
    if (meta.max_seq_len_q == 1 || meta.num_single_token_seqs > 0) {
        const attn::DecodeSplit split =
            plan_decode_split(meta, num_heads, num_kv_heads, head_dim, kv_fp8, workspace, workspace_bytes);
        const cudaError_t err = kv_fp8 ? attn::launch_decode_fp8(a, split, stream) : attn::launch_decode(a, split, stream);
        if (err != cudaSuccess || meta.max_seq_len_q == 1) return err;
        a.prefill_skips_single = true;   // a mixed batch: its one-token sequences are done
    }
    return kv_fp8 ? attn::launch_prefill_fp8(a, meta.max_seq_len_q, stream)
                  : attn::launch_prefill(a, meta.max_seq_len_q, stream);
}

}  // namespace

cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache, const AttentionMetadata& meta,
                            int num_heads, int num_kv_heads, int head_dim, int block_size, float scale, bf16* out,
                            void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return run_attention(q, k_cache, v_cache, /*kv_fp8=*/false, meta, num_heads, num_kv_heads, head_dim, block_size,
                         scale * kLog2e, 1.0f, out, workspace, workspace_bytes, stream);
}

// The FP8 kernels see codes x 2^-120 with q x 2^100 and p x 2^100 (attention_decode.cuh): the scores
// come out x 2^-20 and o / l x 2^-120.
cudaError_t paged_attention_fp8(const bf16* q, const uint8_t* k_cache, const uint8_t* v_cache,
                                const AttentionMetadata& meta, int num_heads, int num_kv_heads, int head_dim,
                                int block_size, float scale, float k_scale, float v_scale, bf16* out, void* workspace,
                                size_t workspace_bytes, cudaStream_t stream) {
    if (!(k_scale > 0.0f) || !std::isfinite(k_scale) || !(v_scale > 0.0f) || !(v_scale < 256.0f))
        return cudaErrorInvalidValue;
    return run_attention(q, k_cache, v_cache, /*kv_fp8=*/true, meta, num_heads, num_kv_heads, head_dim, block_size,
                         scale * kLog2e * k_scale * 0x1p20f, v_scale * 0x1p120f, out, workspace, workspace_bytes,
                         stream);
}

}  // namespace hichat::cuda
