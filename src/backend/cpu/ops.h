// CPU ops of the forward pass. Activations are float32, row-major; weights are read in their stored
// dtype (bf16/f16/f32) and accumulated in float32. Ops never allocate on the hot path beyond small
// per-thread scratch; they run on the given ThreadPool and return when done.
// Which SIMD path runs (AVX-512, AVX2, portable) is chosen once at run time (cpu_features.h).
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "model/weights.h"

namespace hichat::cpu {

using model::WeightTensor;

// y[m, n] = x[m, k] * w[n, k]^T (+ bias[n] if bias && bias->present()). The n outputs are split over
// the pool's threads. Small m (decode) streams each weight row once for all m rows (bandwidth-bound);
// large m (prefill) packs fp32 weight panels into per-thread scratch that grows to fit m once and is
// then reused.
void linear(const float* x, int64_t m, const WeightTensor& w, const WeightTensor* bias, float* y,
            ThreadPool& pool);

// One product of linear_fused(): y[m, w.rows()] = x * w^T (+ bias, when bias && bias->present()).
struct LinearOutput {
    const WeightTensor* w = nullptr;
    const WeightTensor* bias = nullptr;
    float* y = nullptr;
};

// linear() for several weights that multiply the same x[m, k] (q/k/v; gate/up), in one parallel
// region: the outputs' rows, taken end to end, are split over the threads, so there is one dispatch
// and one wait for all of them, and a small output (k/v) does not leave a thread idle. Every w must
// have k columns.
void linear_fused(const float* x, int64_t m, std::span<const LinearOutput> outputs, ThreadPool& pool);

// out[i, :] = table[ids[i], :] as float32.   table: [vocab, dim]
void embedding(const int32_t* ids, int64_t m, const WeightTensor& table, float* out);

// y[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * w   for m rows of `dim`. y may alias x.
void rms_norm(const float* x, int64_t m, int64_t dim, const WeightTensor& w, float eps, float* y);

// In place on x[m, num_heads, head_dim] (row stride `row_stride` floats between tokens), the
// rotate-half RoPE of transformers: pairs (j, j + head_dim/2) rotated by positions[i] * inv_freq[j].
void rope(float* x, int64_t m, int64_t row_stride, int num_heads, int head_dim, const int32_t* positions,
          const float* inv_freq);

// rope() in two steps, so a forward pass computes the angles once for all its layers:
// cos_sin[i, 0:half] = cos and cos_sin[i, half:head_dim] = sin of positions[i] * inv_freq[0:half]
// (the angle rounded to fp32, as transformers forms it).   cos_sin: [m, head_dim]
void rope_cos_sin(const int32_t* positions, int64_t m, const float* inv_freq, int head_dim, float* cos_sin);
// Rotates x as rope() does, with the angles of rope_cos_sin().
void rope_apply(float* x, int64_t m, int64_t row_stride, int num_heads, int head_dim, const float* cos_sin);

// out[i, :] = silu(gate[i, :]) * up[i, :]   for m rows of `dim`. out may alias gate.
void silu_mul(const float* gate, const float* up, int64_t m, int64_t dim, float* out);

// x[i] += y[i]
void add_inplace(float* x, const float* y, int64_t n);

// Causal attention of one sequence with grouped-query heads.
// q:   [num_q, num_heads, head_dim]        (row stride q_stride floats); query i sits at position
//      q_pos0 + i and attends to keys 0 .. q_pos0 + i.
// k,v: [num_kv, num_kv_heads, head_dim]    (row stride kv_stride floats), num_kv >= q_pos0 + num_q.
// out: [num_q, num_heads, head_dim]        (contiguous).
// scale multiplies q.k (1/sqrt(head_dim)). (KV head, query) pairs are handed out to the pool's threads;
// each reads its K/V rows once for all the query heads of its group.
void attention(const float* q, int64_t q_stride, int64_t num_q, int64_t q_pos0, const float* k,
               const float* v, int64_t kv_stride, int num_heads, int num_kv_heads, int head_dim,
               float scale, float* out, ThreadPool& pool);

// attention() over a paged fp32 cache: token j of the sequence has its K/V row at
// pool + (block_table[j / block_size] * block_size + j % block_size) * kv_stride (+ head offset).
void paged_attention(const float* q, int64_t q_stride, int64_t num_q, int64_t q_pos0, const float* k_pool,
                     const float* v_pool, int64_t kv_stride, const int32_t* block_table, int block_size,
                     int num_heads, int num_kv_heads, int head_dim, float scale, float* out, ThreadPool& pool);

// paged_attention() over a cache of K/V elements of `kv_dtype` (kF32, kBF16 or kF16; bf16 / f16 rows are
// widened to fp32 in registers, scores and softmax stay fp32): token j of the sequence has its K/V row at
// pool + (block_table[j / block_size] * block_size + j % block_size) * kv_stride elements (+ head offset).
void paged_attention(const float* q, int64_t q_stride, int64_t num_q, int64_t q_pos0, const void* k_pool,
                     const void* v_pool, DType kv_dtype, int64_t kv_stride, const int32_t* block_table,
                     int block_size, int num_heads, int num_kv_heads, int head_dim, float scale, float* out,
                     ThreadPool& pool);

}  // namespace hichat::cpu
