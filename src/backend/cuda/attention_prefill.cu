// Prefill attention (any number of new tokens per sequence), causal, over the paged cache.
// One block per (tile of 32 rows, sequence, kv head); a row is a (new token, query head of the GQA
// group) pair, so the group's heads share every K/V tile. Flash-style: K/V tiles of 32 keys in shared
// memory (cp.async), online softmax in fp32; a warp skips the tiles past its rows' causal limit.
#include "backend/cuda/attention_launch.h"
#include "backend/cuda/attention_tile.cuh"

namespace hichat::cuda::attn {
namespace {

constexpr int kBlockRows = kWarps * kWarpRows;

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_kernel(AttnArgs a) {
    using Shape = TileShape<D>;
    __shared__ __align__(16) float q_s[kBlockRows * D];
    __shared__ __align__(16) bf16 k_s[Shape::kTileElems];
    __shared__ __align__(16) bf16 v_s[Shape::kTileElems];
    __shared__ __align__(16) float p_all[kWarps * kWarpRows * kTileKeys];

    const int s = blockIdx.y;
    const int kv_head = blockIdx.z;
    const int q_begin = a.cu_seqlens_q[s];
    const int num_q = a.cu_seqlens_q[s + 1] - q_begin;
    const int group_size = a.num_heads / a.num_kv_heads;
    const int num_flat = num_q * group_size;           // rows of this (sequence, kv head)
    const int flat0 = blockIdx.x * kBlockRows;
    if (flat0 >= num_flat) return;
    const int q_pos0 = a.seq_lens_kv[s] - num_q;       // position of the first new token
    const int32_t* block_table = a.block_tables + static_cast<int64_t>(s) * a.max_blocks_per_seq;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    for (int i = threadIdx.x; i < kBlockRows * D; i += kThreads) {
        const int f = flat0 + i / D;
        float v = 0.0f;
        if (f < num_flat) {
            const int head = kv_head * group_size + f % group_size;
            v = __bfloat162float(a.q[(static_cast<int64_t>(q_begin + f / group_size) * a.num_heads + head) * D + i % D]) *
                a.scale_log2;
        }
        q_s[i] = v;
    }

    const int warp_flat0 = flat0 + warp * kWarpRows;
    const int warp_rows = max(0, min(kWarpRows, num_flat - warp_flat0));
    int limit[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) limit[r] = r < warp_rows ? q_pos0 + (warp_flat0 + r) / group_size : -1;
    const int warp_last_key = warp_rows > 0 ? q_pos0 + (warp_flat0 + warp_rows - 1) / group_size : -1;
    const int key_end = q_pos0 + (min(flat0 + kBlockRows, num_flat) - 1) / group_size + 1;

    WarpState<D> st;
    st.init();
    for (int key0 = 0; key0 < key_end; key0 += kTileKeys) {
        load_kv_tile<D>(k_s, v_s, a.k_cache, a.v_cache, block_table, a.block_size, a.num_kv_heads, kv_head, key0,
                        key_end, threadIdx.x, kThreads);
        cp_async_wait_all();
        __syncthreads();   // the tile (and, first time round, q_s) is in shared memory
        if (warp_rows > 0 && key0 <= warp_last_key)
            warp_attend_tile<D>(q_s + warp * kWarpRows * D, warp_rows, limit, k_s, v_s,
                                p_all + warp * kWarpRows * kTileKeys, key0, st, lane);
        __syncthreads();   // before the next tile overwrites k_s / v_s
    }

#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
        if (r < warp_rows) {
            const int f = warp_flat0 + r;
            const int head = kv_head * group_size + f % group_size;
            bf16* dst = a.out + (static_cast<int64_t>(q_begin + f / group_size) * a.num_heads + head) * D +
                        lane * (D / 32);
            const float inv_l = 1.0f / st.l[r];   // key 0 is always visible: l > 0
#pragma unroll
            for (int e = 0; e < D / 32; e += 2)
                *reinterpret_cast<__nv_bfloat162*>(dst + e) =
                    __floats2bfloat162_rn(st.o[r][e] * inv_l, st.o[r][e + 1] * inv_l);
        }
    }
}

template <int D>
cudaError_t launch_prefill_d(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream) {
    const int group_size = a.num_heads / a.num_kv_heads;
    const int64_t num_tiles = (static_cast<int64_t>(max_seq_len_q) * group_size + kBlockRows - 1) / kBlockRows;
    if (a.num_seqs > 65535 || a.num_kv_heads > 65535) return cudaErrorInvalidValue;
    const dim3 grid(static_cast<unsigned>(num_tiles), a.num_seqs, a.num_kv_heads);
    prefill_kernel<D><<<grid, kThreads, 0, stream>>>(a);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_prefill(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream) {
    switch (a.head_dim) {
        case 64: return launch_prefill_d<64>(a, max_seq_len_q, stream);
        case 128: return launch_prefill_d<128>(a, max_seq_len_q, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace hichat::cuda::attn
