// Decode attention: one block per (sequence, kv head, group of up to 8 query heads, key split).
// The GQA group's query heads are the block's rows, so each K/V byte is read once for all of them.
// The block's 4 warps take alternate 32-key tiles (warp-private shared memory, cp.async) and merge
// their softmax states at the end; long contexts also split across blocks (combine_kernel).
#include "backend/cuda/attention_launch.h"
#include "backend/cuda/attention_tile.cuh"

namespace hichat::cuda::attn {
namespace {

template <int D>
constexpr size_t decode_smem_bytes() {
    return sizeof(float) * kWarpRows * D                                   // q rows
           + sizeof(bf16) * kWarps * 2 * TileShape<D>::kTileElems         // per-warp K and V tiles
           + sizeof(float) * kWarps * kWarpRows * kTileKeys;              // per-warp probabilities
}

// Merges the 4 warps' states (in shared memory) and writes the output or the split partials.
template <int D>
__device__ void merge_and_store(const float* merge_o, const float* merge_ml, const AttnArgs& a, int token,
                                int head0, int num_rows, const DecodeSplit& split) {
    for (int i = threadIdx.x; i < num_rows * D; i += kThreads) {
        const int r = i / D;
        const int d = i % D;
        float m_max = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) m_max = fmaxf(m_max, merge_ml[(w * kWarpRows + r) * 2]);
        float l_sum = 0.0f, o_sum = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            const float m_w = merge_ml[(w * kWarpRows + r) * 2];
            if (m_w == -INFINITY) continue;   // that warp saw no key
            const float f = exp2f(m_w - m_max);
            l_sum += merge_ml[(w * kWarpRows + r) * 2 + 1] * f;
            o_sum += merge_o[(w * kWarpRows + r) * D + d] * f;
        }
        const float o = l_sum > 0.0f ? o_sum / l_sum : 0.0f;
        const int64_t token_head = static_cast<int64_t>(token) * a.num_heads + head0 + r;
        if (split.num_splits == 1) {
            a.out[token_head * D + d] = __float2bfloat16(o);
        } else {
            const int64_t idx = token_head * split.num_splits + blockIdx.z;
            split.partial_o[idx * D + d] = o;
            if (d == 0) split.partial_lse[idx] = l_sum > 0.0f ? m_max + log2f(l_sum) : -INFINITY;
        }
    }
}

template <int D>
__global__ void __launch_bounds__(kThreads) decode_kernel(AttnArgs a, DecodeSplit split) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    using Shape = TileShape<D>;
    const int s = blockIdx.x;
    const int token = a.cu_seqlens_q[s];
    if (a.cu_seqlens_q[s + 1] == token) return;   // no new token for this sequence
    const int group_size = a.num_heads / a.num_kv_heads;
    const int num_groups = (group_size + kWarpRows - 1) / kWarpRows;
    const int kv_head = blockIdx.y / num_groups;
    const int head0 = kv_head * group_size + (blockIdx.y % num_groups) * kWarpRows;
    const int num_rows = min(kWarpRows, kv_head * group_size + group_size - head0);
    const int kv_len = a.seq_lens_kv[s];
    const int key_begin = blockIdx.z * split.keys_per_split;
    const int key_end = min(kv_len, key_begin + split.keys_per_split);
    const int32_t* block_table = a.block_tables + static_cast<int64_t>(s) * a.max_blocks_per_seq;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    float* q_s = reinterpret_cast<float*>(smem_raw);                          // [kWarpRows, D]
    bf16* tiles = reinterpret_cast<bf16*>(q_s + kWarpRows * D);               // [kWarps, 2, tile]
    float* p_all = reinterpret_cast<float*>(tiles + kWarps * 2 * Shape::kTileElems);
    for (int i = threadIdx.x; i < kWarpRows * D; i += kThreads) {
        const int r = i / D;
        const bf16* q_row = a.q + (static_cast<int64_t>(token) * a.num_heads + head0 + r) * D;
        q_s[i] = r < num_rows ? __bfloat162float(q_row[i % D]) * a.scale_log2 : 0.0f;
    }
    __syncthreads();

    bf16* k_s = tiles + warp * 2 * Shape::kTileElems;
    bf16* v_s = k_s + Shape::kTileElems;
    float* p_s = p_all + warp * kWarpRows * kTileKeys;
    int limit[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) limit[r] = key_end - 1;
    WarpState<D> st;
    st.init();
    for (int key0 = key_begin + warp * kTileKeys; key0 < key_end; key0 += kWarps * kTileKeys) {
        load_kv_tile<D>(k_s, v_s, a.k_cache, a.v_cache, block_table, a.block_size, a.num_kv_heads, kv_head, key0,
                        key_end, lane, 32);
        cp_async_wait_all();
        __syncwarp();
        warp_attend_tile<D>(q_s, num_rows, limit, k_s, v_s, p_s, key0, st, lane);
    }
    __syncthreads();   // every warp is done with its tiles: reuse them for the merge

    float* merge_o = reinterpret_cast<float*>(tiles);          // [kWarps, kWarpRows, D]
    float* merge_ml = merge_o + kWarps * kWarpRows * D;        // [kWarps, kWarpRows, 2]
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
        if (r < num_rows) {
#pragma unroll
            for (int e = 0; e < D / 32; ++e) merge_o[(warp * kWarpRows + r) * D + lane * (D / 32) + e] = st.o[r][e];
            if (lane == 0) {
                merge_ml[(warp * kWarpRows + r) * 2] = st.m[r];
                merge_ml[(warp * kWarpRows + r) * 2 + 1] = st.l[r];
            }
        }
    }
    __syncthreads();
    merge_and_store<D>(merge_o, merge_ml, a, token, head0, num_rows, split);
}

// out[token, head, :] = sum over splits of o_i * 2^(lse_i - max) / sum of the weights.
__global__ void combine_kernel(AttnArgs a, DecodeSplit split) {
    const int s = blockIdx.x;
    const int token = a.cu_seqlens_q[s];
    if (a.cu_seqlens_q[s + 1] == token) return;
    const int64_t idx0 = (static_cast<int64_t>(token) * a.num_heads + blockIdx.y) * split.num_splits;
    float lse_max = -INFINITY;
    for (int i = 0; i < split.num_splits; ++i) lse_max = fmaxf(lse_max, split.partial_lse[idx0 + i]);
    for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
        float w_sum = 0.0f, o_sum = 0.0f;
        for (int i = 0; i < split.num_splits; ++i) {
            const float lse = split.partial_lse[idx0 + i];
            if (lse == -INFINITY) continue;   // split past this sequence's end
            const float w = exp2f(lse - lse_max);
            w_sum += w;
            o_sum += w * split.partial_o[(idx0 + i) * a.head_dim + d];
        }
        a.out[(static_cast<int64_t>(token) * a.num_heads + blockIdx.y) * a.head_dim + d] =
            __float2bfloat16(w_sum > 0.0f ? o_sum / w_sum : 0.0f);
    }
}

template <int D>
cudaError_t launch_decode_d(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    constexpr size_t kSmem = decode_smem_bytes<D>();
    cudaError_t err = cudaFuncSetAttribute(decode_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(kSmem));
    if (err != cudaSuccess) return err;
    const int group_size = a.num_heads / a.num_kv_heads;
    const int num_groups = (group_size + kWarpRows - 1) / kWarpRows;
    const dim3 grid(a.num_seqs, a.num_kv_heads * num_groups, split.num_splits);
    decode_kernel<D><<<grid, kThreads, kSmem, stream>>>(a, split);
    err = cudaGetLastError();
    if (err != cudaSuccess || split.num_splits == 1) return err;
    combine_kernel<<<dim3(a.num_seqs, a.num_heads), D, 0, stream>>>(a, split);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_decode(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    switch (a.head_dim) {
        case 64: return launch_decode_d<64>(a, split, stream);
        case 128: return launch_decode_d<128>(a, split, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace hichat::cuda::attn
