// Prefill attention (any number of new tokens per sequence), causal, over the paged cache, on tensor
// cores: flash-attention-2 style, bf16 mma.m16n8k16 with fp32 accumulators (attention_mma.cuh).
// A "row" is a (new token, query head of the GQA group) pair, flattened token-major within one
// (sequence, kv head), so the group's heads share every K/V tile. One block of 4 warps takes 128 rows
// (32 per warp: two mma row tiles that share every K and V fragment, which halves the shared-memory
// reads per mma) at head dims up to 128, 64 rows (16 per warp) above, and walks the keys in tiles of
// 64: K/V tiles are copied from the paged cache with cp.async, double-buffered, and read with
// ldmatrix. Per tile a warp computes S = Q K^T (32 x 64), the online softmax in base 2 (fp32, in
// registers), and O += P V with P re-packed to bf16 straight from the S accumulators. With two row
// tiles Q stays in shared memory (its fragments are reloaded per tile: registers hold O and S);
// with one it lives in registers. Only the tiles that cross a row's causal limit are masked; a warp skips the
// tiles entirely past its rows. Blocks of the last (heaviest) row tiles are scheduled first.
//
// An FP8 (E4M3) cache (kFp8): the stages hold the tiles' bytes, and the block turns each tile into one
// bf16 K and V tile (code x 2^-120, exact) before its math, with Q x 2^100 and P x 2^100 so that the
// products stay in fp32's normal range (as in attention_decode.cuh). Included by attention_prefill.cu
// (bf16) and attention_prefill_fp8.cu: one cache type per file, everything internal to each.
#pragma once

#include "backend/cuda/attention_launch.h"
#include "backend/cuda/attention_mma.cuh"
#include "backend/cuda/e4m3_bf16.cuh"

#include <type_traits>

namespace hichat::cuda::attn::prefill {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
// Measurement knobs (scripts/build_kernel_variant.sh): keys per tile, row tiles per warp, blocks per SM.
#ifndef ATTN_PREFILL_TILE_KEYS
#define ATTN_PREFILL_TILE_KEYS 64
#endif
constexpr int kTileKeys = ATTN_PREFILL_TILE_KEYS;

#ifndef ATTN_PREFILL_ROW_TILES
#define ATTN_PREFILL_ROW_TILES 2
#endif
#ifndef ATTN_PREFILL_MINB
#define ATTN_PREFILL_MINB 2
#endif
// mma row tiles (16 rows each) per warp: two up to D = 128; one above, where O alone takes 128 registers.
template <int D>
constexpr int kRowTiles = D > 128 ? 1 : ATTN_PREFILL_ROW_TILES;
template <int D>
constexpr int kWarpRows = 16 * kRowTiles<D>;
template <int D>
constexpr int kBlockRows = kWarps * kWarpRows<D>;
template <int D>
constexpr bool kQInSmem = kRowTiles<D> > 1 || kBlockRows<D> != kTileKeys;   // else Q's fragments live in registers

// Two row tiles: O and S take 192 registers at D = 128 (255 in all, 56 bytes spilled), two blocks
// (8 warps) per SM. Measured on an H100 (2026-12-07), 32/8 heads x 128, bf16 cache: 1 x 4096 causal
// 264 TFLOP/s against 205 with one row tile at three blocks per SM; 1 x 16384 291 against 224; 8B
// TTFT of 2048 tokens 31.8-32.0 ms against 33.4-34.0. With ATTN_PREFILL_TILE_KEYS=32 (no spills) the
// op was 5-10% slower but that TTFT 31.4 ms. One row tile: registers capped at 168 so that three
// blocks fit. D = 256 holds twice the fragments and 135 KB of tiles: one block per SM.
template <int D>
constexpr int kMinBlocksPerSm = D > 128 ? 1 : (kRowTiles<D> > 1 ? ATTN_PREFILL_MINB : 3);

// Shared memory: two stages of (K tile, V tile), rows padded by 16 bytes so that the eight 16-byte rows
// one ldmatrix matrix reads fall in distinct banks. FP8: the two stages hold [64 keys, D] bytes per
// tile, then one padded bf16 K and V tile. With Q in shared memory its padded tile follows (102 KB at
// D = 128: two blocks per SM); else the Q tile passes through stage 1's K tile (FP8: the bf16 K tile)
// before the first prefetch lands there (68 KB at D = 128, three blocks per SM).
template <int D, bool kFp8 = false>
struct Smem {
    static constexpr int kStride = D + 8;   // bf16 per row
    static constexpr int kTileElems = kTileKeys * kStride;
    static constexpr int kQElems = kQInSmem<D> ? kBlockRows<D> * kStride : 0;
    static constexpr int kFp8TileBytes = kTileKeys * D;
    static constexpr int kStagesBytes = kFp8 ? 4 * kFp8TileBytes : 0;   // FP8 only; bf16 stages are tiles
    static constexpr int kBytes =
        kStagesBytes + static_cast<int>(sizeof(bf16)) * ((kFp8 ? 2 : 4) * kTileElems + kQElems);
};

// Where one block's rows are. Row f (0 <= f < num_flat) is token f / group of the sequence, query head
// kv_head * group + f % group; its position (and causal limit: the last key it sees) is q_pos0 + f / group.
struct BlockRows {
    int q_begin;    // index of the sequence's first new token in q / out
    int num_flat;   // rows of this (sequence, kv head)
    int flat0;      // this block's first row
    int group;
    int kv_head;
    int q_pos0;     // position of the sequence's first new token
    int key_end;    // keys [0, key_end) are seen by some row of the block

    __device__ int limit(int f) const { return q_pos0 + f / group; }
    __device__ int64_t offset(int f, int num_heads, int d) const {
        return (static_cast<int64_t>(q_begin + f / group) * num_heads + kv_head * group + f % group) * d;
    }
};

// Copies the block's Q rows into q_s (zeros past num_flat); cp.async when q is 16-byte aligned.
template <int D>
__device__ void load_q_tile(bf16* q_s, const AttnArgs& a, const BlockRows& b) {
    constexpr int kChunks = D / 8;
    const bool vec = (reinterpret_cast<uintptr_t>(a.q) & 15u) == 0;
    for (int c = threadIdx.x; c < kBlockRows<D> * kChunks; c += kThreads) {
        const int r = c / kChunks, part = c % kChunks;
        bf16* dst = q_s + r * Smem<D>::kStride + part * 8;
        const int f = b.flat0 + r;
        if (f >= b.num_flat) {
            *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
            continue;
        }
        const bf16* src = a.q + b.offset(f, a.num_heads, D) + part * 8;
        if (vec) {
            mma::cp_async16(dst, src);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[e] = src[e];
        }
    }
}

// The paged K/V of one (sequence, kv head): key j lives in cache slot
// block_table[j / block_size] * block_size + j % block_size; shifts when block_size is a power of two
// (block_shift >= 0), since an integer division per key costs as much as a tile's softmax.
template <typename T>   // bf16, or uint8_t codes
struct KvPages {
    const T* k;                    // k_cache + kv_head * head_dim
    const T* v;
    const int32_t* block_table;
    int slot_stride;               // num_kv_heads * head_dim
    int block_size, block_shift;

    __device__ int64_t offset(int key) const {
        int block, in_block;
        if (block_shift >= 0) {
            block = key >> block_shift;
            in_block = key & (block_size - 1);
        } else {
            block = key / block_size;
            in_block = key - block * block_size;
        }
        return static_cast<int64_t>(block_table[block] * block_size + in_block) * slot_stride;   // slots < 2^31
    }
};

// Copies keys [key0, key0 + kTileKeys) into k_s / v_s; keys at or past key_end are zero-filled so that
// masked keys hold finite values (0 * V must stay 0).
template <int D>
__device__ void load_kv_tile(bf16* k_s, bf16* v_s, const KvPages<bf16>& pages, int key0, int key_end) {
    constexpr int kChunks = D / 8;
    for (int c = threadIdx.x; c < kTileKeys * kChunks; c += kThreads) {
        const int j = c / kChunks, part = c % kChunks;
        const int key = key0 + j;
        bf16* ks = k_s + j * Smem<D>::kStride + part * 8;
        bf16* vs = v_s + j * Smem<D>::kStride + part * 8;
        if (key < key_end) {
            const int64_t offset = pages.offset(key) + part * 8;
            mma::cp_async16(ks, pages.k + offset);
            mma::cp_async16(vs, pages.v + offset);
        } else {
            *reinterpret_cast<uint4*>(ks) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(vs) = make_uint4(0, 0, 0, 0);
        }
    }
}

// FP8: keys [key0, key0 + kTileKeys) as [kTileKeys, D] bytes into k_s / v_s, zero past key_end.
template <int D>
__device__ void load_kv_tile(uint8_t* k_s, uint8_t* v_s, const KvPages<uint8_t>& pages, int key0, int key_end) {
    constexpr int kChunks = D / 16;
    for (int c = threadIdx.x; c < kTileKeys * kChunks; c += kThreads) {
        const int j = c / kChunks, part = c % kChunks;
        const int key = key0 + j;
        uint8_t* ks = k_s + j * D + part * 16;
        uint8_t* vs = v_s + j * D + part * 16;
        if (key < key_end) {
            const int64_t offset = pages.offset(key) + part * 16;
            mma::cp_async16(ks, pages.k + offset);
            mma::cp_async16(vs, pages.v + offset);
        } else {
            *reinterpret_cast<uint4*>(ks) = make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(vs) = make_uint4(0, 0, 0, 0);
        }
    }
}

// FP8: the codes of one stage's K and V tiles into the padded bf16 tiles k_s / v_s (x 2^-120).
template <int D>
__device__ void convert_kv_tile(const uint8_t* k8, const uint8_t* v8, bf16* k_s, bf16* v_s) {
    constexpr int kChunks = D / 16;
    for (int c = threadIdx.x; c < 2 * kTileKeys * kChunks; c += kThreads) {
        const bool is_v = c >= kTileKeys * kChunks;
        const int i = is_v ? c - kTileKeys * kChunks : c;
        const int j = i / kChunks, part = i % kChunks;
        uint4 lo, hi;
        kernels::e4m3x16_to_bf16(*reinterpret_cast<const uint4*>((is_v ? v8 : k8) + j * D + part * 16), lo, hi);
        bf16* dst = (is_v ? v_s : k_s) + j * Smem<D>::kStride + part * 16;
        *reinterpret_cast<uint4*>(dst) = lo;
        *reinterpret_cast<uint4*>(dst + 8) = hi;
    }
}

constexpr float kPBias = 100.0f;   // log2 of the FP8 path's factor on P (kernels::kBf16x2Pow100 on Q)

// One warp's rows (R tiles of 16) and their running softmax state. In row tile r this thread holds rows
// 16r + g and 16r + g + 8 (g = lane / 4; index [r][0] and [r][1] below) and, of each 8-column block,
// columns 2t, 2t + 1 with t = lane % 4.
template <int D>
struct WarpRows {
    static constexpr int R = kRowTiles<D>;
    uint32_t q[kQInSmem<D> ? 1 : D / 16][4];   // A fragments of Q, one per 16 dims (Q in registers only)
    float o[R][D / 8][4];     // unnormalised output, one C fragment per 8 dims
    float m[R][2];            // running max of the scaled scores (base 2)
    float l[R][2];            // this thread's part of the running sum (the quad's four parts add up)
    int limit[R][2];          // last key each row may see
    int min_limit, max_limit;

    __device__ void init() {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int i = 0; i < D / 8; ++i) o[r][i][0] = o[r][i][1] = o[r][i][2] = o[r][i][3] = 0.0f;
            m[r][0] = m[r][1] = -INFINITY;
            l[r][0] = l[r][1] = 0.0f;
        }
    }

    // Q in registers: the fragments of the warp's 16 rows; with scale_up (FP8), q x 2^100 (exact, |q| < 2^28).
    __device__ void load_q(const bf16* q_s, int lane, bool scale_up) {
        static_assert(!kQInSmem<D>);
        const bf16* row = q_s + (lane % 16) * Smem<D>::kStride + (lane / 16) * 8;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) mma::ldmatrix_x4(q[kk], row + kk * 16);
        if (!scale_up) return;
        const uint32_t f = kernels::kBf16x2Pow100;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const __nv_bfloat162 v = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&q[kk][r]),
                                                 *reinterpret_cast<const __nv_bfloat162*>(&f));
                q[kk][r] = *reinterpret_cast<const uint32_t*>(&v);
            }
        }
    }
};

// Q in shared memory, FP8: the block's Q tile x 2^100 in place (exact, |q| < 2^28).
template <int D>
__device__ void scale_up_q_tile(bf16* q_s) {
    const uint32_t bits = kernels::kBf16x2Pow100;
    const __nv_bfloat162 f = *reinterpret_cast<const __nv_bfloat162*>(&bits);
    for (int c = threadIdx.x; c < kBlockRows<D> * D / 2; c += kThreads) {
        __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(q_s + (c / (D / 2)) * Smem<D>::kStride) + c % (D / 2);
        *p = __hmul2(*p, f);
    }
}

// s = Q K^T for the tile's 64 keys: s[r][j] is the C fragment of row tile r, keys 8j .. 8j + 7. With Q
// in shared memory, q_s is the warp's first row.
template <int D>
__device__ __forceinline__ void score_tile(float (&s)[kRowTiles<D>][kTileKeys / 8][4], const WarpRows<D>& w,
                                           const bf16* q_s, const bf16* k_s, int lane) {
    constexpr int R = kRowTiles<D>;
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int j = 0; j < kTileKeys / 8; ++j) s[r][j][0] = s[r][j][1] = s[r][j][2] = s[r][j][3] = 0.0f;
    }
    // Matrices of one ldmatrix_x4: (keys +0, dims +0), (keys +0, dims +8), (keys +8, dims +0), (keys +8, dims +8).
    const bf16* k_row = k_s + ((lane / 16) * 8 + lane % 8) * Smem<D>::kStride + ((lane / 8) % 2) * 8;
    const bf16* q_row = q_s + (lane % 16) * Smem<D>::kStride + (lane / 16) * 8;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qf[R][4];   // Q's A fragments of these 16 dims, one per row tile
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if constexpr (kQInSmem<D>) {
                mma::ldmatrix_x4(qf[r], q_row + r * 16 * Smem<D>::kStride + kk * 16);
            } else {
#pragma unroll
                for (int i = 0; i < 4; ++i) qf[r][i] = w.q[kk][i];
            }
        }
#pragma unroll
        for (int n = 0; n < kTileKeys / 16; ++n) {
            uint32_t b[4];
            mma::ldmatrix_x4(b, k_row + n * 16 * Smem<D>::kStride + kk * 16);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                mma::mma_bf16(s[r][2 * n], qf[r], b[0], b[1]);
                mma::mma_bf16(s[r][2 * n + 1], qf[r], b[2], b[3]);
            }
        }
    }
}

// Scales the scores to base-2 logits and masks the keys past each row's causal limit (only when the
// tile crosses one of the warp's limits).
template <int D>
__device__ __forceinline__ void scale_and_mask(float (&s)[kRowTiles<D>][kTileKeys / 8][4], const WarpRows<D>& w,
                                               int key0, float scale_log2, int lane) {
    const bool masked = key0 + kTileKeys - 1 > w.min_limit;
#pragma unroll
    for (int r = 0; r < kRowTiles<D>; ++r) {
#pragma unroll
        for (int j = 0; j < kTileKeys / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = key0 + j * 8 + 2 * (lane % 4) + (e & 1);
                s[r][j][e] = (masked && key > w.limit[r][e / 2]) ? -INFINITY : s[r][j][e] * scale_log2;
            }
        }
    }
}

// Online softmax: new running max per row (over the quad), rescale of o and l, s -> p = exp2(s - m)
// (x 2^p_bias).
template <int D>
__device__ __forceinline__ void softmax_update(float (&s)[kRowTiles<D>][kTileKeys / 8][4], WarpRows<D>& w,
                                               float p_bias) {
#pragma unroll
    for (int r = 0; r < kRowTiles<D>; ++r) {
        float mx[2] = {w.m[r][0], w.m[r][1]};
#pragma unroll
        for (int j = 0; j < kTileKeys / 8; ++j) {
            mx[0] = fmaxf(mx[0], fmaxf(s[r][j][0], s[r][j][1]));
            mx[1] = fmaxf(mx[1], fmaxf(s[r][j][2], s[r][j][3]));
        }
        float alpha[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
            mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
            // Every row sees key 0 in the first tile, so mx is finite from then on.
            alpha[h] = mma::exp2_approx(w.m[r][h] - mx[h]);
            w.m[r][h] = mx[h];
        }
        float sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < kTileKeys / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                s[r][j][e] = mma::exp2_approx(s[r][j][e] - w.m[r][e / 2] + p_bias);
                sum[e / 2] += s[r][j][e];
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) w.l[r][h] = w.l[r][h] * alpha[h] + sum[h];
        if (alpha[0] == 1.0f && alpha[1] == 1.0f) continue;   // the max did not move (the common case late on)
#pragma unroll
        for (int i = 0; i < D / 8; ++i) {
            w.o[r][i][0] *= alpha[0];
            w.o[r][i][1] *= alpha[0];
            w.o[r][i][2] *= alpha[1];
            w.o[r][i][3] *= alpha[1];
        }
    }
}

// o += P V: the C fragments of two neighbouring 8-key blocks of P form one A fragment (16 keys).
template <int D>
__device__ __forceinline__ void accumulate_pv(WarpRows<D>& w, const float (&p)[kRowTiles<D>][kTileKeys / 8][4],
                                              const bf16* v_s, int lane) {
    constexpr int R = kRowTiles<D>;
    // Transposed matrices of one ldmatrix_x4: (keys +0, dims +0), (keys +8, dims +0), (keys +0, dims +8),
    // (keys +8, dims +8): registers 0, 1 are B of dims +0, registers 2, 3 B of dims +8.
    const bf16* v_row = v_s + (((lane / 8) % 2) * 8 + lane % 8) * Smem<D>::kStride + (lane / 16) * 8;
#pragma unroll
    for (int kt = 0; kt < kTileKeys / 16; ++kt) {
        uint32_t a[R][4];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            a[r][0] = mma::pack_bf16(p[r][2 * kt][0], p[r][2 * kt][1]);
            a[r][1] = mma::pack_bf16(p[r][2 * kt][2], p[r][2 * kt][3]);
            a[r][2] = mma::pack_bf16(p[r][2 * kt + 1][0], p[r][2 * kt + 1][1]);
            a[r][3] = mma::pack_bf16(p[r][2 * kt + 1][2], p[r][2 * kt + 1][3]);
        }
#pragma unroll
        for (int db = 0; db < D / 16; ++db) {
            uint32_t b[4];
            mma::ldmatrix_x4_trans(b, v_row + kt * 16 * Smem<D>::kStride + db * 16);
#pragma unroll
            for (int r = 0; r < R; ++r) {
                mma::mma_bf16(w.o[r][2 * db], a[r], b[0], b[1]);
                mma::mma_bf16(w.o[r][2 * db + 1], a[r], b[2], b[3]);
            }
        }
    }
}

// out = o / l for this thread's rows (those at or past num_flat are padding and not stored).
template <int D>
__device__ void store_rows(WarpRows<D>& w, const AttnArgs& a, const BlockRows& b, int warp_flat0, int lane) {
#pragma unroll
    for (int r = 0; r < kRowTiles<D>; ++r) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float l = w.l[r][h];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const int f = warp_flat0 + 16 * r + lane / 4 + 8 * h;
            if (f >= b.num_flat) continue;
            const float inv_l = a.out_scale / l;   // key 0 is always visible: l > 0
            bf16* dst = a.out + b.offset(f, a.num_heads, D) + 2 * (lane % 4);
#pragma unroll
            for (int i = 0; i < D / 8; ++i)
                *reinterpret_cast<__nv_bfloat162*>(dst + 8 * i) =
                    __floats2bfloat162_rn(w.o[r][i][2 * h] * inv_l, w.o[r][i][2 * h + 1] * inv_l);
        }
    }
}

// The causal limits of this thread's rows and the warp's range of limits; max_limit is -1 for a warp
// with no real row (it then skips every tile). Padding rows borrow the last real row's limit.
template <int D>
__device__ void set_limits(WarpRows<D>& w, const BlockRows& b, int warp_flat0, int lane) {
    if (warp_flat0 >= b.num_flat) {
        w.min_limit = w.max_limit = -1;
#pragma unroll
        for (int r = 0; r < kRowTiles<D>; ++r) w.limit[r][0] = w.limit[r][1] = -1;
        return;
    }
    const int last = min(warp_flat0 + kWarpRows<D> - 1, b.num_flat - 1);
#pragma unroll
    for (int r = 0; r < kRowTiles<D>; ++r) {
        w.limit[r][0] = b.limit(min(warp_flat0 + 16 * r + lane / 4, last));
        w.limit[r][1] = b.limit(min(warp_flat0 + 16 * r + lane / 4 + 8, last));
    }
    w.min_limit = b.limit(warp_flat0);
    w.max_limit = b.limit(last);
}

template <int D, bool kFp8>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm<D>) prefill_kernel(AttnArgs a) {
    using Cache = std::conditional_t<kFp8, uint8_t, bf16>;
    using S = Smem<D, kFp8>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    // bf16: stage i holds K at 2i tiles in, V at 2i + 1. FP8: stage i's codes at 2i and 2i + 1 FP8 tiles
    // in, then the bf16 K and V tiles. Then Q's own tile, or Q passes through stage 1's K tile (FP8: the
    // bf16 K tile).
    uint8_t* stages8 = smem_raw;
    bf16* kv_s = reinterpret_cast<bf16*>(smem_raw + S::kStagesBytes);
    bf16* q_s = kQInSmem<D> ? kv_s + (kFp8 ? 2 : 4) * S::kTileElems : (kFp8 ? kv_s : kv_s + 2 * S::kTileElems);
    auto stage_k = [&](int stage) -> Cache* {
        if constexpr (kFp8) return stages8 + 2 * stage * S::kFp8TileBytes;
        else return kv_s + 2 * stage * S::kTileElems;
    };
    constexpr int kStageV = kFp8 ? S::kFp8TileBytes : S::kTileElems;   // V after K, in Cache elements

    BlockRows b;
    const int s = blockIdx.y;
    b.kv_head = blockIdx.x;
    b.q_begin = a.cu_seqlens_q[s];
    b.group = a.num_heads / a.num_kv_heads;
    b.num_flat = (a.cu_seqlens_q[s + 1] - b.q_begin) * b.group;
    b.flat0 = (gridDim.z - 1 - blockIdx.z) * kBlockRows<D>;   // heaviest tiles first
    if (b.flat0 >= b.num_flat || (a.prefill_skips_single && b.num_flat == b.group)) return;
    b.q_pos0 = a.seq_lens_kv[s] - b.num_flat / b.group;
    b.key_end = b.limit(min(b.flat0 + kBlockRows<D>, b.num_flat) - 1) + 1;
    KvPages<Cache> pages;
    pages.k = static_cast<const Cache*>(a.k_cache) + b.kv_head * D;
    pages.v = static_cast<const Cache*>(a.v_cache) + b.kv_head * D;
    pages.block_table = a.block_tables + static_cast<int64_t>(s) * a.max_blocks_per_seq;
    pages.slot_stride = a.num_kv_heads * D;
    pages.block_size = a.block_size;
    pages.block_shift = (a.block_size & (a.block_size - 1)) == 0 ? __ffs(a.block_size) - 1 : -1;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_flat0 = b.flat0 + warp * kWarpRows<D>;
    const bf16* warp_q_s = q_s + warp * kWarpRows<D> * S::kStride;

    WarpRows<D> w;
    w.init();
    set_limits(w, b, warp_flat0, lane);

    const int num_tiles = (b.key_end + kTileKeys - 1) / kTileKeys;
    load_q_tile<D>(q_s, a, b);
    load_kv_tile<D>(stage_k(0), stage_k(0) + kStageV, pages, 0, b.key_end);
    mma::cp_async_commit();
    mma::cp_async_wait<0>();
    __syncthreads();   // Q (and tile 0) in shared memory
    if constexpr (kQInSmem<D>) {
        if constexpr (kFp8) {
            scale_up_q_tile<D>(q_s);
            __syncthreads();
        }
    } else {
        w.load_q(warp_q_s, lane, kFp8);
        __syncthreads();   // every warp holds its Q fragments: stage 1 (FP8: the bf16 tiles) is free
    }
    for (int t = 0; t < num_tiles; ++t) {
        const int key0 = t * kTileKeys;
        if (t + 1 < num_tiles) {   // prefetch the next tile into the other stage
            Cache* next = stage_k((t + 1) % 2);
            load_kv_tile<D>(next, next + kStageV, pages, key0 + kTileKeys, b.key_end);
            mma::cp_async_commit();
            mma::cp_async_wait<1>();
        } else {
            mma::cp_async_wait<0>();
        }
        __syncthreads();   // tile t is in shared memory
        const bf16* k_s;
        if constexpr (kFp8) {
            convert_kv_tile<D>(stage_k(t % 2), stage_k(t % 2) + kStageV, kv_s, kv_s + S::kTileElems);
            __syncthreads();
            k_s = kv_s;
        } else {
            k_s = stage_k(t % 2);
        }
        if (key0 <= w.max_limit) {
            float sc[kRowTiles<D>][kTileKeys / 8][4];
            score_tile<D>(sc, w, warp_q_s, k_s, lane);
            scale_and_mask<D>(sc, w, key0, a.scale_log2, lane);
            softmax_update<D>(sc, w, kFp8 ? kPBias : 0.0f);
            accumulate_pv<D>(w, sc, k_s + S::kTileElems, lane);
        }
        __syncthreads();   // before the next prefetch (FP8: conversion) overwrites this stage
    }
    if (w.max_limit >= 0) store_rows<D>(w, a, b, warp_flat0, lane);
}

template <int D, bool kFp8>
cudaError_t launch_prefill_d(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream) {
    const int group = a.num_heads / a.num_kv_heads;
    const int64_t num_row_tiles = (static_cast<int64_t>(max_seq_len_q) * group + kBlockRows<D> - 1) / kBlockRows<D>;
    if (a.num_seqs > 65535 || num_row_tiles > 65535 || a.num_kv_heads > 65535) return cudaErrorInvalidValue;
    // Over 48 KB of shared memory needs an opt-in; done once per process, on the first call (eager: the
    // runner captures only decode steps in graphs, and those never come here).
    constexpr int kBytes = Smem<D, kFp8>::kBytes;
    static const cudaError_t smem_opt_in =
        cudaFuncSetAttribute(prefill_kernel<D, kFp8>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    if (smem_opt_in != cudaSuccess) return smem_opt_in;
    const dim3 grid(a.num_kv_heads, a.num_seqs, static_cast<unsigned>(num_row_tiles));
    prefill_kernel<D, kFp8><<<grid, kThreads, kBytes, stream>>>(a);
    return cudaGetLastError();
}

template <bool kFp8>
cudaError_t launch(const AttnArgs& a, int max_seq_len_q, cudaStream_t stream) {
    switch (a.head_dim) {
        case 64: return launch_prefill_d<64, kFp8>(a, max_seq_len_q, stream);
        case 80: return launch_prefill_d<80, kFp8>(a, max_seq_len_q, stream);
        case 96: return launch_prefill_d<96, kFp8>(a, max_seq_len_q, stream);
        case 128: return launch_prefill_d<128, kFp8>(a, max_seq_len_q, stream);
        case 256: return launch_prefill_d<256, kFp8>(a, max_seq_len_q, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace
}  // namespace hichat::cuda::attn::prefill
