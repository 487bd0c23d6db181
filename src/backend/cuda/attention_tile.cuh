// Device pieces shared by the decode and prefill attention kernels (CUDA cores, fp32 math).
// A "row" is one (query token, query head) pair; the rows of a block all read the K/V of one kv head.
// Keys go through shared memory in tiles of kTileKeys, copied from the paged cache with cp.async.
// In a tile, lane l of a warp scores key l against up to kWarpRows rows (q from shared memory, pre-
// scaled by scale * log2(e)); the online softmax runs in base 2; for P.V, lane l owns D / 32
// consecutive output dims of every row.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/kernel_util.cuh"

namespace hichat::cuda::attn {

using bf16 = __nv_bfloat16;

constexpr int kTileKeys = 32;       // keys per tile: one per lane
constexpr int kWarpRows = 8;        // rows one warp carries
constexpr int kWarps = 4;           // warps per block
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct TileShape {
    static constexpr int kRowStride = D + 8;                   // bf16; 16-byte padding: no bank conflicts
    static constexpr int kTileElems = kTileKeys * kRowStride;  // one K or V tile, bf16
    static constexpr int kDimsPerLane = D / 32;
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

// Copies keys [key0, key0 + kTileKeys) of one kv head from the paged cache into k_s/v_s; keys at or past
// key_end are zero-filled (so masked keys hold finite numbers). Threads tid, tid + num_threads, ... share
// the 16-byte chunks. The caller waits (cp_async_wait_all) and synchronises before reading.
template <int D>
__device__ __forceinline__ void load_kv_tile(bf16* k_s, bf16* v_s, const bf16* k_cache, const bf16* v_cache,
                                             const int32_t* block_table, int block_size, int num_kv_heads,
                                             int kv_head, int key0, int key_end, int tid, int num_threads) {
    constexpr int kChunks = D / 8;
    for (int c = tid; c < kTileKeys * kChunks; c += num_threads) {
        const int j = c / kChunks;
        const int part = c % kChunks;
        const int key = key0 + j;
        bf16* ks = k_s + j * TileShape<D>::kRowStride + part * 8;
        bf16* vs = v_s + j * TileShape<D>::kRowStride + part * 8;
        if (key < key_end) {
            const int64_t block = block_table[key / block_size];
            const int64_t slot = block * block_size + key % block_size;
            const int64_t offset = (slot * num_kv_heads + kv_head) * D + part * 8;
            cp_async16(ks, k_cache + offset);
            cp_async16(vs, v_cache + offset);
        } else {
            *reinterpret_cast<uint4*>(ks) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(vs) = make_uint4(0, 0, 0, 0);
        }
    }
    cp_async_commit();
}

// Online-softmax state of one warp's rows. m: running max (base 2), l: running sum, o: unnormalised output.
template <int D>
struct WarpState {
    float m[kWarpRows];
    float l[kWarpRows];
    float o[kWarpRows][D / 32];

    __device__ __forceinline__ void init() {
#pragma unroll
        for (int r = 0; r < kWarpRows; ++r) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
#pragma unroll
            for (int e = 0; e < D / 32; ++e) o[r][e] = 0.0f;
        }
    }
};

// The D / 32 consecutive bf16 at v as floats, in one 4- or 8-byte load (conflict-free across the warp).
template <int D>
__device__ __forceinline__ void load_lane_dims(const bf16* v, float (&out)[D / 32]) {
    static_assert(D == 64 || D == 128, "head_dim 64 or 128");
    if constexpr (D == 128) {
        const uint2 raw = *reinterpret_cast<const uint2*>(v);
        const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
        const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
        out[0] = a.x;
        out[1] = a.y;
        out[2] = b.x;
        out[3] = b.y;
    } else {
        const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(v));
        out[0] = a.x;
        out[1] = a.y;
    }
}

// One key tile for this warp's num_rows rows. q_s: [kWarpRows, D] fp32 of this warp's rows.
// limit[r]: last key row r may see (inclusive). p_s: [kWarpRows, kTileKeys] scratch of this warp.
template <int D>
__device__ __forceinline__ void warp_attend_tile(const float* q_s, int num_rows, const int (&limit)[kWarpRows],
                                                 const bf16* k_s, const bf16* v_s, float* p_s, int key0,
                                                 WarpState<D>& st, int lane) {
    using Shape = TileShape<D>;
    float s[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) s[r] = 0.0f;
    const bf16* k_row = k_s + lane * Shape::kRowStride;
#pragma unroll 4
    for (int c = 0; c < D / 8; ++c) {
        float kf[8];
        kernels::bf16x8_to_float(*reinterpret_cast<const kernels::Bf16x8*>(k_row + c * 8), kf);
#pragma unroll
        for (int r = 0; r < kWarpRows; ++r) {
            if (r < num_rows) {
                const float4 q0 = *reinterpret_cast<const float4*>(q_s + r * D + c * 8);
                const float4 q1 = *reinterpret_cast<const float4*>(q_s + r * D + c * 8 + 4);
                s[r] += q0.x * kf[0] + q0.y * kf[1] + q0.z * kf[2] + q0.w * kf[3] + q1.x * kf[4] +
                        q1.y * kf[5] + q1.z * kf[6] + q1.w * kf[7];
            }
        }
    }
    const int key = key0 + lane;
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) {
        if (r < num_rows) {
            const float sr = key <= limit[r] ? s[r] : -INFINITY;
            const float m_new = fmaxf(st.m[r], kernels::warp_max(sr));
            const float m_use = m_new == -INFINITY ? 0.0f : m_new;   // all masked so far: keep zeros
            const float alpha = exp2f(st.m[r] - m_use);
            const float p = exp2f(sr - m_use);
            st.l[r] = st.l[r] * alpha + kernels::warp_sum(p);
            st.m[r] = m_new;
#pragma unroll
            for (int e = 0; e < D / 32; ++e) st.o[r][e] *= alpha;
            p_s[r * kTileKeys + lane] = p;
        }
    }
    __syncwarp();
    const bf16* v_col = v_s + lane * Shape::kDimsPerLane;
#pragma unroll 2
    for (int j = 0; j < kTileKeys; j += 4) {
        float vf[4][D / 32];
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
            const bf16* v = v_col + (j + jj) * Shape::kRowStride;
            load_lane_dims<D>(v, vf[jj]);
        }
#pragma unroll
        for (int r = 0; r < kWarpRows; ++r) {
            if (r < num_rows) {
                const float4 p = *reinterpret_cast<const float4*>(p_s + r * kTileKeys + j);
#pragma unroll
                for (int e = 0; e < D / 32; ++e)
                    st.o[r][e] += p.x * vf[0][e] + p.y * vf[1][e] + p.z * vf[2][e] + p.w * vf[3][e];
            }
        }
    }
    __syncwarp();
}

}  // namespace hichat::cuda::attn
