// Decode attention on tensor cores: one block per (sequence, kv head, group of up to 16 query heads,
// key split). The GQA group's query heads are the M dimension of bf16 mma.sync m16n8k16 (fp32
// accumulators), so S = Q K^T and O += P V both run on tensor cores and each K/V byte is read once for
// the whole group. Each of the block's 4 warps streams its own 16-key tiles (warps take alternate tiles)
// through a private kStages-deep cp.async ring in shared memory; the warps' softmax states are merged at
// the end and long contexts also split across blocks (combine_kernel).
//
// Register layouts (PTX ISA, mma.m16n8k16 with .bf16): lane = 4 * g + t. The A fragment holds rows g and
// g + 8, columns 2t, 2t + 1 (+ 8); B holds rows (k) 2t, 2t + 1 (+ 8) of column (n) g; C holds rows g and
// g + 8, columns 2t, 2t + 1. The S accumulator of two 8-key n-tiles is thus exactly P's A fragment.
// Shared tiles are [16 keys, D] bf16 laid out so that the eight rows one ldmatrix phase reads hit eight
// different bank groups: where a row is a multiple of 8 chunks of 16 bytes (D 64, 128, 256) its chunks
// are XOR-swizzled by r & 7; otherwise (D 80, 96: 10 or 12 chunks) rows are padded by one chunk, an odd
// stride in chunks.
//
// An FP8 (E4M3) cache (kFp8): the ring holds the tiles' bytes (half the copy). K's codes go from the
// stage straight into B fragments (tile_scores_fp8); V's are turned into one bf16 tile in the layout
// above before P V. Either way three integer ops per pair of codes move the sign, exponent and
// mantissa bits into bf16's places, which makes code x 2^-120 exactly (subnormal codes included). Q
// goes in x 2^100 and P x 2^100, so that both products stay in fp32's normal range; the softmax scale
// carries k_scale x 2^20 and the output v_scale x 2^120.
// Included by attention_decode.cu (bf16) and attention_decode_fp8.cu: one cache type per file.
#pragma once

#include "backend/cuda/attention_launch.h"
#include "backend/cuda/e4m3_bf16.cuh"
#include "backend/cuda/kernel_util.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

// The kernels' host stubs must not clash between the two files: everything here is internal to each.
namespace hichat::cuda::attn::decode {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16;       // mma M: query heads of one GQA group per block
constexpr int kTileKeys = 16;   // keys per warp tile: the k of P.V, two n-tiles of S
constexpr int kMaxCombineSplits = 64;   // attention.cu plans at most this many splits
// FP8 cache: stages per warp and blocks per SM (compile-time knobs for measurement only,
// scripts/build_kernel_variant.sh). The FP8 kernel is bound by its instructions, not by memory, so
// more resident warps pay: 8B shapes on an H100, 2026-12-06 (bench/results/fp8-attn-occupancy-h100-
// 2026-12-06.txt), ms for 4 stages and 2 blocks (K and V converted together) / 3 stages and 3 blocks
// (one converted tile): 256 seqs x 1024 ctx 0.276 / 0.235, 256 x 2000 0.493 / 0.425.
#ifndef ATTN_FP8_STAGES
#define ATTN_FP8_STAGES 3
#endif
#ifndef ATTN_FP8_MINB
#define ATTN_FP8_MINB 3
#endif

// A warp's shared memory: kStages stages of (K tile, V tile) as cached, then (FP8) the bf16 tile made
// from the current stage's V. Head sizes up to 128 keep two blocks per SM; 256 (twice the
// registers for o and q, and tiles twice as large) runs one block per SM with two stages.
template <int D, bool kFp8>
struct DecodeShape {
    static_assert(D == 64 || D == 80 || D == 96 || D == 128 || D == 256, "head_dim 64, 80, 96, 128 or 256");
    static constexpr bool kSwizzle = (D / 8) % 8 == 0;          // else padded rows (tile_offset)
    static constexpr int kRowBytes = kSwizzle ? 2 * D : 2 * D + 16;   // one bf16 key row in a tile
    static constexpr int kElemBytes = kFp8 ? 1 : 2;
    static constexpr int kStages = D > 128 ? 2 : kFp8 ? ATTN_FP8_STAGES : 3;   // tiles in flight per warp
    static constexpr int kMinBlocksPerSm = D > 128 ? 1 : kFp8 ? ATTN_FP8_MINB : 2;
    static constexpr int kChunks = D * kElemBytes / 16;         // 16-byte chunks per cached key row
    static constexpr int kTileBytes = kTileKeys * kRowBytes;    // one bf16 K or V tile
    static constexpr int kCacheTileBytes = kFp8 ? kTileKeys * D : kTileBytes;   // FP8: plain [16, D] bytes
    static constexpr int kStageBytes = 2 * kCacheTileBytes;     // K then V
    static constexpr int kConvertedBytes = kFp8 ? kTileBytes : 0;   // V's bf16 tile
    static constexpr int kWarpBytes = kStages * kStageBytes + kConvertedBytes;
    static constexpr int kSmemBytes = kWarps * kWarpBytes;
    static constexpr int kMergeBytes = static_cast<int>(sizeof(float)) * kWarps * kRows * (D + 2);
    static_assert(kMergeBytes <= kSmemBytes, "the merge reuses the tile ring");
    static_assert(kMinBlocksPerSm * (kSmemBytes + 1024) <= 227 * 1024, "kMinBlocksPerSm blocks per SM");
};

// ---- PTX wrappers ----

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; when !valid nothing is read and the 16 bytes are zero-filled.
__device__ __forceinline__ void cp_async16_zfill(uint32_t dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t addr, uint32_t (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// c += a * b for one m16n8k16 bf16 tile with fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

using kernels::bf16x2_bits;

__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void st_shared_v4(uint32_t addr, uint4 v) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

constexpr float kPBias = 100.0f;   // log2 of the FP8 path's factor on P (kernels::kBf16x2Pow100 on Q)

// Byte offset of 16-byte chunk `chunk` of key row `row` in a bf16 [kTileKeys, D] tile (DecodeShape:
// swizzled or padded).
template <int D>
__device__ __forceinline__ uint32_t tile_offset(int row, int chunk) {
    using Shape = DecodeShape<D, false>;
    return static_cast<uint32_t>(row * Shape::kRowBytes + (Shape::kSwizzle ? chunk ^ (row & 7) : chunk) * 16);
}

// FP8 K is read straight from the stage into B fragments, never converted in shared memory. A dot
// product does not care in which order its dims are summed, so lane (g, t)'s fragment of slab kk (the
// mma's k indices 2t, 2t + 1, 2t + 8, 2t + 9 of key g) is the 4-byte word of key g at dim
// fp8_k_word_dim(kk, t): bytes 0 and 2 as (2t, 2t + 1), bytes 1 and 3 as (2t + 8, 2t + 9), and Q's
// fragments take the same dims (load_q_fragments). A lane's words of kFp8KSlabs consecutive slabs are
// one load of 4 x kFp8KSlabs bytes (16 for D 64, 128, 256; 8 for 96; 4 for 80).
template <int D>
constexpr int kFp8KSlabs = (D / 16) % 4 == 0 ? 4 : (D / 16) % 2 == 0 ? 2 : 1;

template <int D>
__device__ __forceinline__ int fp8_k_word_dim(int kk, int t) {
    constexpr int G = kFp8KSlabs<D>;
    return (kk / G) * 16 * G + t * 4 * G + 4 * (kk % G);
}

// Byte offset of 16-byte chunk `chunk` of key row `row` in an FP8 K tile: with 8 or 16 chunks per row,
// odd rows swap their chunk halves so that the 16-byte reads of rows g and g + 1 (one phase) use
// different banks; otherwise (rows of 64, 80 or 96 bytes) they already do.
template <int D>
__device__ __forceinline__ uint32_t fp8_k_offset(int row, int chunk) {
    constexpr bool kSwap = (D / 16) % 8 == 0;
    return static_cast<uint32_t>(row * D + (kSwap ? chunk ^ ((row & 1) << 2) : chunk) * 16);
}

// ---- per-warp state ----

// Online softmax of one lane's two rows (g and g + 8) in base 2. m: running max (quad-uniform),
// l: this lane's share of the running sum (summed over the quad at the end), o: unnormalised output.
template <int D>
struct DecodeState {
    float m[2];
    float l[2];
    float o[D / 8][4];   // n-tile of 8 dims x C fragment

    __device__ __forceinline__ void init() {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            m[h] = -INFINITY;
            l[h] = 0.0f;
        }
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
        }
    }
};

// Where one block works: its query rows, kv head and key range.
struct DecodeWork {
    int token, head0, num_rows, kv_head, key_begin, key_end;
    const int32_t* block_table;
};

// The A fragments of this block's query rows (rows past num_rows are zero). q need only be 2-aligned.
// With kFp8 the fragments hold q x 2^100 (exact, |q| < 2^28).
template <int D, bool kFp8>
__device__ __forceinline__ void load_q_fragments(const AttnArgs& a, const DecodeWork& w, int lane,
                                                 uint32_t (&q)[D / 16][4]) {
    const int g = lane / 4, c = 2 * (lane % 4);
    const bf16* row0 = a.q + (static_cast<int64_t>(w.token) * a.num_heads + w.head0 + g) * D;
    const bf16* row8 = row0 + 8 * D;
    const bool has0 = g < w.num_rows, has8 = g + 8 < w.num_rows;
    auto pair = [](const bf16* p, bool has, int stride = 1) {
        if (!has) return 0u;
        __nv_bfloat162 v = __halves2bfloat162(p[0], p[stride]);
        if constexpr (kFp8) {
            const uint32_t f = kernels::kBf16x2Pow100;
            v = __hmul2(v, *reinterpret_cast<const __nv_bfloat162*>(&f));
        }
        return bf16x2_bits(v);
    };
    if constexpr (kFp8) {   // the dims of fp8_k_word's order: (base, base + 2) and (base + 1, base + 3)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int base = fp8_k_word_dim<D>(kk, lane % 4);
            q[kk][0] = pair(row0 + base, has0, 2);
            q[kk][1] = pair(row8 + base, has8, 2);
            q[kk][2] = pair(row0 + base + 1, has0, 2);
            q[kk][3] = pair(row8 + base + 1, has8, 2);
        }
    } else {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            q[kk][0] = pair(row0 + 16 * kk + c, has0);
            q[kk][1] = pair(row8 + 16 * kk + c, has8);
            q[kk][2] = pair(row0 + 16 * kk + 8 + c, has0);
            q[kk][3] = pair(row8 + 16 * kk + 8 + c, has8);
        }
    }
}

// Cache slot of `key` (-1 at or past key_end).
__device__ __forceinline__ int slot_of(const AttnArgs& a, const DecodeWork& w, int key) {
    if (key >= w.key_end) return -1;
    return w.block_table[key / a.block_size] * a.block_size + key % a.block_size;
}

// Starts the copy of one 16-key tile into the stage at k_addr (V follows K). my_slot: the slot of key
// lane % 16 of the tile (slot_of), so any block size works; keys with slot -1 are zero-filled. bf16
// tiles land in the tile layout (tile_offset); FP8 K as [16 keys, D] bytes in fp8_k_offset's layout for
// tile_scores_fp8, FP8 V as plain [16 keys, D] bytes for convert_tile.
// The warp's lanes take the tile's 16 x kChunks chunks in turn (a row need not divide 32 lanes).
template <int D, bool kFp8>
__device__ __forceinline__ void issue_tile(uint32_t k_addr, const AttnArgs& a, int kv_head, int my_slot, int lane) {
    using Shape = DecodeShape<D, kFp8>;
    constexpr int kCopies = kTileKeys * Shape::kChunks;
    const char* k_cache = static_cast<const char*>(a.k_cache);
    const char* v_cache = static_cast<const char*>(a.v_cache);
#pragma unroll
    for (int c0 = 0; c0 < kCopies; c0 += 32) {
        constexpr bool kWholeRows = 32 % Shape::kChunks == 0;   // a copy round covers whole rows
        const int c = c0 + lane;
        const int row = kWholeRows ? c0 / Shape::kChunks + lane / Shape::kChunks : c / Shape::kChunks;   // < 32
        const int chunk = kWholeRows ? lane % Shape::kChunks : c % Shape::kChunks;
        const int slot = __shfl_sync(kernels::kFullMask, my_slot, row);   // every lane takes part
        if (kCopies % 32 != 0 && c >= kCopies) continue;
        const int64_t offset =
            slot >= 0 ? (static_cast<int64_t>(slot) * a.num_kv_heads + kv_head) * D * Shape::kElemBytes + chunk * 16 : 0;
        const uint32_t k_dst = k_addr + (kFp8 ? fp8_k_offset<D>(row, chunk) : tile_offset<D>(row, chunk));
        const uint32_t v_dst = k_addr + Shape::kCacheTileBytes + (kFp8 ? static_cast<uint32_t>(row * D + chunk * 16) : tile_offset<D>(row, chunk));
        cp_async16_zfill(k_dst, k_cache + offset, slot >= 0);
        cp_async16_zfill(v_dst, v_cache + offset, slot >= 0);
    }
}

// FP8: one [16 keys, D] tile of codes at src -> a bf16 tile (x 2^-120) at dst in the swizzled layout.
template <int D>
__device__ __forceinline__ void convert_tile(uint32_t src, uint32_t dst, int lane) {
    constexpr int kChunks = D / 16;   // 16-code chunks per key row
#pragma unroll
    for (int i = lane; i < kTileKeys * kChunks; i += 32) {
        const int row = i / kChunks, c = i % kChunks;
        uint4 lo, hi;
        kernels::e4m3x16_to_bf16(ld_shared_v4(src + i * 16), lo, hi);
        st_shared_v4(dst + tile_offset<D>(row, 2 * c), lo);
        st_shared_v4(dst + tile_offset<D>(row, 2 * c + 1), hi);
    }
}

// S = Q K^T for the tile's 16 keys: s[n] is the C fragment of keys 8n .. 8n + 7.
template <int D>
__device__ __forceinline__ void tile_scores(uint32_t k_addr, const uint32_t (&q)[D / 16][4], int lane,
                                            float (&s)[2][4]) {
    // ldmatrix x4 matrices: keys 0-7 dims lo, keys 0-7 dims hi, keys 8-15 dims lo, keys 8-15 dims hi.
    const int row = (lane & 7) + ((lane >> 4) << 3);
    const int half = (lane >> 3) & 1;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t b[4];
        ldmatrix_x4(k_addr + tile_offset<D>(row, 2 * kk + half), b);
        mma_bf16(s[0], q[kk], b[0], b[1]);
        mma_bf16(s[1], q[kk], b[2], b[3]);
    }
}

// S = Q K^T for the tile's 16 keys from the FP8 K codes at k_addr (fp8_k_word_dim, fp8_k_offset), each
// word turned into the fragment's two bf16 pairs in registers: s[n] is the C fragment of keys 8n .. 8n + 7.
template <int D>
__device__ __forceinline__ void tile_scores_fp8(uint32_t k_addr, const uint32_t (&q)[D / 16][4], int lane,
                                                float (&s)[2][4]) {
    constexpr int G = kFp8KSlabs<D>;
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[n][e] = 0.0f;
        const int key = g + 8 * n;
#pragma unroll
        for (int j = 0; j < D / 16 / G; ++j) {
            uint32_t word[G];
            const int byte = j * 16 * G + t * 4 * G;   // fp8_k_word_dim(j * G, t)
            if constexpr (G == 4) {
                const uint4 v = ld_shared_v4(k_addr + fp8_k_offset<D>(key, byte / 16));
                word[0] = v.x, word[1] = v.y, word[2] = v.z, word[3] = v.w;
            } else if constexpr (G == 2) {
                asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(word[0]), "=r"(word[1]) : "r"(k_addr + key * D + byte) : "memory");
            } else {
                asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(word[0]) : "r"(k_addr + key * D + byte) : "memory");
            }
#pragma unroll
            for (int i = 0; i < G; ++i) {
                using kernels::fp8_pair_to_bf16x2;
                mma_bf16(s[n], q[j * G + i], fp8_pair_to_bf16x2(word[i] << 8), fp8_pair_to_bf16x2(word[i]));
            }
        }
    }
}

// Scales and masks the scores, updates the running max / sum, rescales o, and packs P as an A fragment
// (with kFp8, P x 2^100; l follows).
template <int D, bool kFp8>
__device__ __forceinline__ void tile_softmax(float (&s)[2][4], int key0, int key_end, float scale_log2,
                                             DecodeState<D>& st, int lane, uint32_t (&p)[4]) {
    const int t = lane % 4;
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int key = key0 + 8 * n + 2 * t + (e & 1);
            s[n][e] = key < key_end ? s[n][e] * scale_log2 : -INFINITY;
            mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
        }
    }
    float m_use[2], alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(kernels::kFullMask, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(kernels::kFullMask, mx[h], 2));
        const float m_new = fmaxf(st.m[h], mx[h]);
        m_use[h] = m_new == -INFINITY ? 0.0f : m_new;   // nothing seen yet: p and alpha come out 0
        alpha[h] = exp2f(st.m[h] - m_use[h]);
        st.m[h] = m_new;
        st.l[h] *= alpha[h];
        if constexpr (kFp8) m_use[h] -= kPBias;
    }
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const __nv_bfloat162 pb = __floats2bfloat162_rn(exp2f(s[n][2 * h] - m_use[h]),
                                                            exp2f(s[n][2 * h + 1] - m_use[h]));
            const float2 pf = __bfloat1622float2(pb);   // the sum sees the rounded P that the mma uses
            st.l[h] += pf.x + pf.y;
            p[2 * n + h] = bf16x2_bits(pb);
        }
    }
    // alpha is exactly 1 where the running max did not move (most tiles, once it has settled): the warp
    // skips o's D / 2 multiplies when no lane needs them, which leaves o bit for bit as it was.
    if (__any_sync(kernels::kFullMask, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
            st.o[n][0] *= alpha[0];
            st.o[n][1] *= alpha[0];
            st.o[n][2] *= alpha[1];
            st.o[n][3] *= alpha[1];
        }
    }
}

// O += P V for the tile (V at v_addr).
template <int D>
__device__ __forceinline__ void tile_pv(uint32_t v_addr, const uint32_t (&p)[4], DecodeState<D>& st, int lane) {
    // ldmatrix x4 .trans matrices: keys 0-7 dims lo, keys 8-15 dims lo, keys 0-7 dims hi, keys 8-15 dims hi.
    const int row = (lane & 7) + (((lane >> 3) & 1) << 3);
    const int half = lane >> 4;
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
        uint32_t b[4];
        ldmatrix_x4_trans(v_addr + tile_offset<D>(row, 2 * j + half), b);
        mma_bf16(st.o[2 * j], p, b[0], b[1]);
        mma_bf16(st.o[2 * j + 1], p, b[2], b[3]);
    }
}

// This warp's tiles key_begin + 16 * (warp + kWarps * i), kStages - 1 of them in flight while one is
// computed. One commit group per tile (empty past the end) keeps wait_group's count uniform. The first
// tiles whose keys all come before the new token (written by earlier steps, which completed before
// this step's metadata copy) are issued before pdl_wait(); the new token's K/V and the queries come
// from the kernel before this one, so the rest and q wait. Batch 1 (2026-11-30, one device run): 8B
// 3.927 -> 3.913, 1B 0.819 -> 0.813 ms per token.
template <int D, bool kFp8>
__device__ __forceinline__ void attend_warp_tiles(const AttnArgs& a, const DecodeWork& w, uint32_t ring, int warp,
                                                  int lane, DecodeState<D>& st) {
    using Shape = DecodeShape<D, kFp8>;
    constexpr int kStages = Shape::kStages;
    const uint32_t converted = ring + kStages * Shape::kStageBytes;   // FP8: the bf16 tiles
    const int num_tiles = (max(w.key_end - w.key_begin, 0) + kTileKeys - 1) / kTileKeys;
    const int my_tiles = num_tiles > warp ? (num_tiles - warp + kWarps - 1) / kWarps : 0;
    auto key0_of = [&](int i) { return w.key_begin + (warp + i * kWarps) * kTileKeys; };
    int next_slot = my_tiles > 0 ? slot_of(a, w, key0_of(0) + lane % kTileKeys) : -1;
    // Issues tile i, and looks up the slots of tile i + 1 so their latency hides behind a whole tile.
    auto issue = [&](int i) {
        if (i < my_tiles) {
            const int slot = next_slot;
            if (i + 1 < my_tiles) next_slot = slot_of(a, w, key0_of(i + 1) + lane % kTileKeys);
            issue_tile<D, kFp8>(ring + (i % kStages) * Shape::kStageBytes, a, w.kv_head, slot, lane);
        }
        cp_async_commit();
    };
    const int new_key = a.seq_lens_kv[blockIdx.x] - 1;
    auto written_before = [&](int i) {
        return i >= my_tiles || min(key0_of(i) + kTileKeys, w.key_end) <= new_key;
    };
    int issued = 0;
    for (; issued < kStages - 1 && written_before(issued); ++issued) issue(issued);
    kernels::pdl_wait();
    uint32_t q[D / 16][4];
    load_q_fragments<D, kFp8>(a, w, lane, q);
    for (; issued < kStages - 1; ++issued) issue(issued);
    for (int i = 0; i < my_tiles; ++i) {
        issue(i + kStages - 1);
        cp_async_wait<kStages - 1>();
        __syncwarp();
        const uint32_t stage = ring + (i % kStages) * Shape::kStageBytes;
        float s[2][4];
        uint32_t p[4];
        uint32_t v_addr = stage + Shape::kTileBytes;
        if constexpr (kFp8) {   // K in registers; V into the bf16 tile
            convert_tile<D>(stage + Shape::kCacheTileBytes, converted, lane);
            tile_scores_fp8<D>(stage, q, lane, s);
            v_addr = converted;
            __syncwarp();
        } else {
            tile_scores<D>(stage, q, lane, s);
        }
        tile_softmax<D, kFp8>(s, key0_of(i), w.key_end, a.scale_log2, st, lane, p);
        tile_pv<D>(v_addr, p, st, lane);
        __syncwarp();   // every lane is done with the stage before the next issue overwrites it
    }
    cp_async_wait<0>();
}

// Sums l over the quad and writes this warp's state into merge_o [kWarps, kRows, D] and
// merge_ml [kWarps, kRows, 2].
template <int D>
__device__ __forceinline__ void store_warp_state(DecodeState<D>& st, float* merge_o, float* merge_ml, int warp,
                                                 int lane) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        st.l[h] += __shfl_xor_sync(kernels::kFullMask, st.l[h], 1);
        st.l[h] += __shfl_xor_sync(kernels::kFullMask, st.l[h], 2);
        const int row = warp * kRows + g + 8 * h;
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
            *reinterpret_cast<float2*>(merge_o + row * D + 8 * n + 2 * t) = make_float2(st.o[n][2 * h], st.o[n][2 * h + 1]);
        if (t == 0) {
            merge_ml[row * 2] = st.m[h];
            merge_ml[row * 2 + 1] = st.l[h];
        }
    }
}

// Merges the warps' states and writes the output (bf16) or this split's partials.
template <int D>
__device__ void merge_and_store(const float* merge_o, const float* merge_ml, const AttnArgs& a, const DecodeWork& w,
                                const DecodeSplit& split) {
    for (int i = threadIdx.x; i < w.num_rows * D; i += kThreads) {
        const int r = i / D;
        const int d = i % D;
        float m_max = -INFINITY;
#pragma unroll
        for (int k = 0; k < kWarps; ++k) m_max = fmaxf(m_max, merge_ml[(k * kRows + r) * 2]);
        float l_sum = 0.0f, o_sum = 0.0f;
#pragma unroll
        for (int k = 0; k < kWarps; ++k) {
            const float m_k = merge_ml[(k * kRows + r) * 2];
            if (m_k == -INFINITY) continue;   // that warp saw no key
            const float f = exp2f(m_k - m_max);
            l_sum += merge_ml[(k * kRows + r) * 2 + 1] * f;
            o_sum += merge_o[(k * kRows + r) * D + d] * f;
        }
        const float o = l_sum > 0.0f ? o_sum / l_sum * a.out_scale : 0.0f;
        const int64_t token_head = static_cast<int64_t>(w.token) * a.num_heads + w.head0 + r;
        if (split.num_splits == 1) {
            a.out[token_head * D + d] = __float2bfloat16(o);
        } else {
            const int64_t idx = token_head * split.num_splits + blockIdx.z;
            split.partial_o[idx * D + d] = o;
            if (d == 0) split.partial_lse[idx] = l_sum > 0.0f ? m_max + log2f(l_sum) : -INFINITY;
        }
    }
}

template <int D, bool kFp8>
__global__ void __launch_bounds__(kThreads, (DecodeShape<D, kFp8>::kMinBlocksPerSm)) decode_kernel(AttnArgs a, DecodeSplit split) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    kernels::pdl_launch_dependents();
    const int s = blockIdx.x;   // the step's metadata came with a copy before the step's first kernel
    DecodeWork w;
    w.token = a.cu_seqlens_q[s];
    if (a.cu_seqlens_q[s + 1] != w.token + 1) return;   // no new token, or several (the prefill kernel's)
    const int group_size = a.num_heads / a.num_kv_heads;
    const int num_row_groups = (group_size + kRows - 1) / kRows;
    w.kv_head = blockIdx.y / num_row_groups;
    w.head0 = w.kv_head * group_size + (blockIdx.y % num_row_groups) * kRows;
    w.num_rows = min(kRows, (w.kv_head + 1) * group_size - w.head0);
    w.key_begin = blockIdx.z * split.keys_per_split;
    w.key_end = min(a.seq_lens_kv[s], w.key_begin + split.keys_per_split);   // <= key_begin: split past the end
    w.block_table = a.block_tables + static_cast<int64_t>(s) * a.max_blocks_per_seq;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    DecodeState<D> st;
    st.init();
    attend_warp_tiles<D, kFp8>(a, w, smem_u32(smem_raw) + warp * DecodeShape<D, kFp8>::kWarpBytes, warp, lane, st);
    __syncthreads();   // every warp is done with its ring: reuse it for the merge

    float* merge_o = reinterpret_cast<float*>(smem_raw);   // [kWarps, kRows, D]
    float* merge_ml = merge_o + kWarps * kRows * D;        // [kWarps, kRows, 2]
    store_warp_state<D>(st, merge_o, merge_ml, warp, lane);
    __syncthreads();
    merge_and_store<D>(merge_o, merge_ml, a, w, split);
}

// out[token, head, :] = sum over splits of o_i * w_i with w_i = 2^(lse_i - max) / (sum of them). One block
// per (sequence, query head): warp 0 turns the lse into weights (shared memory), then every split's
// partial load is independent of the others, so they overlap instead of waiting on each other.
__global__ void combine_kernel(AttnArgs a, DecodeSplit split) {
    __shared__ float weight_s[kMaxCombineSplits];
    kernels::pdl_launch_dependents();
    kernels::pdl_wait();
    const int s = blockIdx.x;
    const int token = a.cu_seqlens_q[s];
    if (a.cu_seqlens_q[s + 1] != token + 1) return;
    const int64_t idx0 = (static_cast<int64_t>(token) * a.num_heads + blockIdx.y) * split.num_splits;
    if (threadIdx.x < 32) {
        constexpr int kPerLane = kMaxCombineSplits / 32;
        const int lane = threadIdx.x;
        float lse[kPerLane];
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) {
            const int i = lane + 32 * k;
            lse[k] = i < split.num_splits ? split.partial_lse[idx0 + i] : -INFINITY;
            m = fmaxf(m, lse[k]);
        }
        m = kernels::warp_max(m);
        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) {
            lse[k] = lse[k] == -INFINITY ? 0.0f : exp2f(lse[k] - m);   // splits past the end weigh 0
            sum += lse[k];
        }
        sum = kernels::warp_sum(sum);
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) {
            const int i = lane + 32 * k;
            if (i < split.num_splits) weight_s[i] = sum > 0.0f ? lse[k] / sum : 0.0f;
        }
    }
    __syncthreads();
    for (int d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
        float o = 0.0f;
#pragma unroll 8
        for (int i = 0; i < split.num_splits; ++i) o += weight_s[i] * split.partial_o[(idx0 + i) * a.head_dim + d];
        a.out[(static_cast<int64_t>(token) * a.num_heads + blockIdx.y) * a.head_dim + d] = __float2bfloat16(o);
    }
}

template <int D, bool kFp8>
cudaError_t launch_decode_d(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    constexpr int kSmem = DecodeShape<D, kFp8>::kSmemBytes;
    cudaError_t err = cudaFuncSetAttribute(decode_kernel<D, kFp8>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    if (err != cudaSuccess) return err;
    if (split.num_splits > kMaxCombineSplits) return cudaErrorInvalidValue;
    const int group_size = a.num_heads / a.num_kv_heads;
    const int num_row_groups = (group_size + kRows - 1) / kRows;
    const dim3 grid(a.num_seqs, a.num_kv_heads * num_row_groups, split.num_splits);
    err = kernels::launch_pdl(decode_kernel<D, kFp8>, grid, dim3(kThreads), kSmem, stream, a, split);
    if (err != cudaSuccess || split.num_splits == 1) return err;
    return kernels::launch_pdl(combine_kernel, dim3(a.num_seqs, a.num_heads), dim3(D), 0, stream, a, split);
}

template <bool kFp8>
int blocks_per_sm(int head_dim) {
    switch (head_dim) {
        case 64: return DecodeShape<64, kFp8>::kMinBlocksPerSm;
        case 80: return DecodeShape<80, kFp8>::kMinBlocksPerSm;
        case 96: return DecodeShape<96, kFp8>::kMinBlocksPerSm;
        case 128: return DecodeShape<128, kFp8>::kMinBlocksPerSm;
        case 256: return DecodeShape<256, kFp8>::kMinBlocksPerSm;
        default: return 1;
    }
}

template <bool kFp8>
cudaError_t launch(const AttnArgs& a, const DecodeSplit& split, cudaStream_t stream) {
    switch (a.head_dim) {
        case 64: return launch_decode_d<64, kFp8>(a, split, stream);
        case 80: return launch_decode_d<80, kFp8>(a, split, stream);
        case 96: return launch_decode_d<96, kFp8>(a, split, stream);
        case 128: return launch_decode_d<128, kFp8>(a, split, stream);
        case 256: return launch_decode_d<256, kFp8>(a, split, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace
}  // namespace hichat::cuda::attn::decode
