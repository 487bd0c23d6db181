// Internal to the CUDA backend: the two attention kernels behind paged_attention() (attention.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace hichat::cuda::attn {

// Everything both kernels read; pointers are device pointers (see ops.h for the layouts).
struct AttnArgs {
    const __nv_bfloat16* q;           // [T, num_heads, head_dim]
    const void* k_cache;              // [num_blocks, block_size, num_kv_heads, head_dim] bf16 or E4M3
    const void* v_cache;              // same
    const int32_t* cu_seqlens_q;      // [num_seqs + 1]
    const int32_t* seq_lens_kv;       // [num_seqs]
    const int32_t* block_tables;      // [num_seqs, max_blocks_per_seq]
    int max_blocks_per_seq;
    int num_seqs;
    int num_heads, num_kv_heads, head_dim, block_size;
    bool kv_fp8 = false;              // E4M3 cache (see attention_decode.cuh for the factors)
    float scale_log2;                 // softmax scale * log2(e) (FP8: * k_scale * 2^20)
    float out_scale = 1.0f;           // FP8: v_scale * 2^120
    __nv_bfloat16* out;               // [T, num_heads, head_dim]
    bool prefill_skips_single = false;  // leave one-token sequences to the decode kernel
};

// Decode: the sequences with exactly one new token (the others are left alone). Keys are cut into
// num_splits ranges of keys_per_split (a multiple of 128); with num_splits > 1 the partials go to
// partial_o [T, num_heads, num_splits, head_dim] and partial_lse [T, num_heads, num_splits] (log2
// units) and a second kernel combines them.
struct DecodeSplit {
    int num_splits = 1;
    int keys_per_split = 0;
    float* partial_o = nullptr;
    float* partial_lse = nullptr;
};
cudaError_t launch_decode(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream);   // bf16 cache
cudaError_t launch_decode_fp8(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream);
// Decode blocks resident per SM at this head size (the kernel's launch bound, which its shared memory
// fits): what the split planner fills waves with.
int decode_blocks_per_sm(int head_dim);   // bf16 cache
int decode_blocks_per_sm_fp8(int head_dim);

// Any number of new tokens per sequence (max_seq_len_q of them at most), causal.
cudaError_t launch_prefill(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream);   // bf16 cache
cudaError_t launch_prefill_fp8(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream);

}  // namespace hichat::cuda::attn
