// CUDA ops of the forward pass. Pure launchers (style rule 8): device pointers, sizes, a stream and
// caller-provided workspace in, cudaError_t out; they never allocate, free, sync, log or throw.
// Layouts: activations row-major; the residual stream x is fp32, GEMM inputs bf16; KV cache bf16 or
// FP8 (E4M3, one byte per element: value = code * the layer's k_scale or v_scale), paged:
// k_cache/v_cache [num_blocks, block_size, num_kv_heads, head_dim], token slot s lives at
// block s / block_size, offset s % block_size (slot = block_id * block_size + offset).
// This header is plain C++ (no CUDA headers beyond the runtime types) so that executor/ can include it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hichat::cuda {

using bf16 = __nv_bfloat16;

// out[i, :] = table[id, :] as fp32, id = ids[i], or prev_ids[-ids[i] - 1] where ids[i] < 0 (a token
// chosen on the device by the previous step; prev_ids may be null when no id is negative).
//                                                               table [vocab, hidden] bf16
cudaError_t embedding(const int32_t* ids, const int32_t* prev_ids, int num_tokens, const bf16* table, int hidden,
                      float* out, cudaStream_t stream);

// out[i, :] = bf16(x[i, :] / rms(x[i, :]) * w).               x [rows, dim] fp32, w [dim] bf16
cudaError_t rms_norm(const float* x, int rows, int dim, const bf16* w, float eps, bf16* out, cudaStream_t stream);

// On the fused projection qkv [T, (num_heads + 2 * num_kv_heads) * head_dim] bf16 (q heads, then k, then v):
// adds bias (nullable, same width), applies per-head RMSNorm to q and k when q_norm/k_norm are given
// ([head_dim] bf16, Qwen3), rotates q and k (rotate-half RoPE: pairs (j, j + head_dim/2), angle
// positions[t] * inv_freq[j]), writes q to q_out [T, num_heads * head_dim] bf16 and k, v into the
// paged cache at slot_mapping[t]: as bf16, or with kv_fp8 as e4m3(k / k_scale) and e4m3(v / v_scale)
// from the fp32 values, rounded to nearest even and saturated to +-448. head_dim a multiple of 4, at
// most 256; pointers 4-byte aligned (the caches 2-byte aligned with kv_fp8). cudaErrorInvalidValue for
// any other shape or alignment, and with kv_fp8 for a scale that is not positive and finite.
struct QkvRopeParams {
    const bf16* qkv;             // [T, width]
    const bf16* bias;            // [width] or null
    const bf16* q_norm;          // [head_dim] or null
    const bf16* k_norm;          // [head_dim] or null
    float norm_eps;
    const int32_t* positions;    // [T]
    const float* inv_freq;       // [head_dim / 2]
    const int32_t* slot_mapping; // [T]
    int num_tokens, num_heads, num_kv_heads, head_dim;
    bf16* q_out;                 // [T, num_heads * head_dim]
    void* k_cache;               // paged, bf16 or (kv_fp8) E4M3 bytes
    void* v_cache;               // paged
    bool kv_fp8 = false;
    float k_scale = 1.0f, v_scale = 1.0f;   // kv_fp8: the dequantization multipliers (positive, finite)
    // qkv as an FP8 projection's unit-scale product (Gemm::run_fp8_unit): each value is first
    // bf16(qkv[t, c] * row_scale[t] * col_scale[c]), as scale_fp8_product to bf16 makes it. Both or neither.
    const float* row_scale = nullptr;       // [T]
    const float* col_scale = nullptr;       // [width]
};
cudaError_t qkv_rope_kv_write(const QkvRopeParams& p, cudaStream_t stream);

// Per-step batch layout shared by every layer (built once per step by the runner).
struct AttentionMetadata {
    const int32_t* cu_seqlens_q;   // [num_seqs + 1] prefix sums of new tokens per sequence
    const int32_t* seq_lens_kv;    // [num_seqs] tokens in the cache after this step (pos0 + new)
    const int32_t* block_tables;   // [num_seqs, max_blocks_per_seq], unused entries -1
    int num_seqs = 0;
    int num_tokens = 0;            // total new tokens (== cu_seqlens_q[num_seqs])
    int max_blocks_per_seq = 0;
    int max_seq_len_q = 0;         // largest new-token count of one sequence (1 for pure decode)
    int max_seq_len_kv = 0;        // largest seq_lens_kv
    int num_single_token_seqs = 0; // sequences with exactly one new token: in a batch with longer ones
                                   // (max_seq_len_q > 1) they go to the decode kernel; 0 sends all to prefill
};

// Causal attention over the paged cache, GQA-aware. Query token i of sequence s sits at position
// seq_lens_kv[s] - (new tokens of s) + i and attends to keys 0 .. that position.
// q [T, num_heads * head_dim] bf16 -> out [T, num_heads * head_dim] bf16. head_dim 64, 80, 96, 128 or 256.
// workspace: attention_workspace_bytes(...) bytes (split-KV partials for long decodes); may be null if 0.
size_t attention_workspace_bytes(int max_num_tokens, int num_heads, int head_dim, int max_seq_len_kv);
cudaError_t paged_attention(const bf16* q, const bf16* k_cache, const bf16* v_cache, const AttentionMetadata& meta,
                            int num_heads, int num_kv_heads, int head_dim, int block_size, float scale, bf16* out,
                            void* workspace, size_t workspace_bytes, cudaStream_t stream);
// The same over an FP8 (E4M3) cache: key j of a head means k_cache codes * k_scale (v likewise). The
// codes become bf16 exactly in shared memory, so the tensor-core math is the bf16 kernels' (fp32
// softmax and accumulation); k_scale goes into the softmax scale and v_scale into the output.
// cudaErrorInvalidValue unless k_scale, v_scale are positive and finite and v_scale < 256 (the output
// factor v_scale x 2^120 must be a finite float), and for what paged_attention refuses;
// cudaErrorMisalignedAddress for caches not 16-byte aligned (or out not 4-byte aligned).
cudaError_t paged_attention_fp8(const bf16* q, const uint8_t* k_cache, const uint8_t* v_cache,
                                const AttentionMetadata& meta, int num_heads, int num_kv_heads, int head_dim,
                                int block_size, float scale, float k_scale, float v_scale, bf16* out, void* workspace,
                                size_t workspace_bytes, cudaStream_t stream);

// out[t, j] = silu(gate_up[t, j]) * gate_up[t, I + j].         gate_up [T, 2I] bf16, out [T, I] bf16
// With a_scale [T] and w_scale [2I] (an FP8 projection's unit-scale product, Gemm::run_fp8_unit), each
// input is first bf16(gate_up[t, c] * a_scale[t] * w_scale[c]), as scale_fp8_product to bf16 makes it.
cudaError_t silu_mul(const bf16* gate_up, int num_tokens, int intermediate, bf16* out, cudaStream_t stream,
                     const float* a_scale = nullptr, const float* w_scale = nullptr);

// out[r, :] = x[rows[r], :].                                   x [*, dim] fp32
cudaError_t gather_rows(const float* x, const int32_t* rows, int num_rows, int dim, float* out, cudaStream_t stream);

// out[i] = argmax(logits[i, :]) (lowest index on ties).        logits [rows, vocab] fp32
cudaError_t argmax_rows(const float* logits, int rows, int vocab, int32_t* out, cudaStream_t stream);

// D[1, n] (+)= A[1, k] W[n, k]^T for a one-token step (m == 1): a weight-streaming kernel that
// Gemm::run takes instead of cuBLASLt where gemv_applies(). A, W bf16 row-major; D fp32 (f32_out,
// optionally accumulate) or bf16.
bool gemv_applies(const void* a, const void* w, const void* d, int m, int k);   // m == 1, k%8, 16-byte a/w
cudaError_t gemv(const bf16* a, const bf16* w, void* d, bool f32_out, int m, int n, int k, bool accumulate,
                 cudaStream_t stream);
// One row's SwiGLU MLP input: out[j] = bf16(silu(g_j) * u_j), g = W[0, inter) a and u = W[inter, 2 inter) a
// each rounded to bf16 (as gemv to bf16 then silu_mul). w_gate_up [2 * intermediate, k]; gemv_applies().
cudaError_t gemv_silu_mul(const bf16* a, const bf16* w_gate_up, bf16* out, int intermediate, int k,
                          cudaStream_t stream);

// FP8 (E4M3) weights: w [n, k] one byte per element, row j meaning w[j, :] * w_scale[j] (a per-tensor
// scale is one value repeated per row; fused q/k/v or gate/up keep each part's scale on its rows).
// D[m, n] (+)= A[m, k] W^T for steps of 1-8 tokens, on the tensor cores with the weight turned into
// bf16 in registers: A bf16 row-major, D fp32 (f32_out, optionally accumulate) or bf16; fp32
// accumulation. Needs k % 64 == 0, 16-byte aligned a and w. The activations stay bf16 (weight-only
// FP8: a small step reads weights).
bool fp8_gemv_applies(const void* a, const void* w, const void* d, int m, int k);   // 1 <= m <= 8
// splits: warps per 16-row tile, each a slice of k (1, 2, 4 or 8); 0 chooses from the shape (what the
// runner uses; tests and cuda_ops_bench force others to compare).
cudaError_t fp8_gemv(const bf16* a, const uint8_t* w, const float* w_scale, void* d, bool f32_out, int m, int n,
                     int k, bool accumulate, cudaStream_t stream, int splits = 0);
// The SwiGLU MLP input of 1-8 tokens from FP8 gate/up weights: out[t, j] = bf16(silu(g) * u) with
// g = bf16((A W_gate^T)[t, j]), u = bf16((A W_up^T)[t, j]), as fp8_gemv to bf16 then silu_mul.
// w_gate_up [2 * intermediate, k] (gate rows, then up rows), w_scale [2 * intermediate]; out bf16
// [m, intermediate]; fp8_gemv_applies().
cudaError_t fp8_gemv_silu_mul(const bf16* a, const uint8_t* w_gate_up, const float* w_scale, bf16* out, int m,
                              int intermediate, int k, cudaStream_t stream);

// Per-token dynamic FP8 quantization of activations: scale[r] = max(amax(x[r, :]) / 448, 1 / (448 * 512))
// and q[r, c] = e4m3(x[r, c] / scale[r]) rounded to nearest even, saturated to +-448.
// x bf16 [rows, k], q [rows, k] bytes (k % 16 == 0, 16-byte aligned x and q).
cudaError_t quantize_fp8_rows(const bf16* x, int rows, int k, uint8_t* q, float* scale, cudaStream_t stream);
// rms_norm straight into the FP8 GEMM's input: the bf16 row rms_norm writes, quantized as
// quantize_fp8_rows does it (code for code, scale for scale), without writing the bf16 row.
// dim % 4 == 0, x 16-byte, w 8-byte and q 4-byte aligned.
cudaError_t rms_norm_fp8(const float* x, int rows, int dim, const bf16* w, float eps, uint8_t* q, float* q_scale,
                         cudaStream_t stream);
// The FP8 GEMM's epilogue: d[i, j] (+)= p[i, j] * a_scale[i] * w_scale[j] for the unit-scale bf16 product
// p [m, n] (Gemm::run_fp8_unit); d fp32 (optionally accumulated) or bf16. n % 4 == 0, p 8-byte and
// w_scale 16-byte aligned.
cudaError_t scale_fp8_product(const bf16* p, const float* a_scale, const float* w_scale, void* d, bool f32_out,
                              bool accumulate, int m, int n, cudaStream_t stream);
// The SwiGLU MLP input straight into the FP8 GEMM's input: y[t, j] = bf16(silu(g) * u) with
// g = bf16(gate_up[t, j] * a_scale[t] * w_scale[j]) and u likewise at column I + j (gate_up the
// unit-scale product of the FP8 gate_up projection; without scales, a_scale and w_scale null, g and u
// are gate_up's values), then quantized per row as quantize_fp8_rows does: q [T, I] bytes and
// q_scale [T]. Equal, code for code, to scale_fp8_product to bf16, silu_mul and quantize_fp8_rows; the
// bf16 rows in between are never written. I % 16 == 0 (as quantize_fp8_rows), gate_up and q 16-byte aligned. q_scale may be
// a_scale (each row reads its own scale before writing it).
cudaError_t silu_mul_fp8(const bf16* gate_up, const float* a_scale, const float* w_scale, int num_tokens,
                         int intermediate, uint8_t* q, float* q_scale, cudaStream_t stream);

// Host-side helper for converting weights at load time (not a hot-path op).
cudaError_t add_bias_bf16(bf16* x, const bf16* bias, int rows, int cols, cudaStream_t stream);

// One row's sampling settings, as the engine's Sampler holds them (sampling/sampling_params.h).
struct SampleRowParams {
    float temperature;   // 0 (or anything not > 0): argmax, lowest index on ties
    int top_k;           // 0 or >= vocab: off
    float top_p;         // >= 1 (or NaN): off
    float min_p;         // <= 0 (or NaN): off; keeps p >= min_p * p_max
    float u;             // uniform draw in [0, 1) from the sequence's Rng (Sampler::next_unit)
};

// out[i] = a token drawn from row i of logits [rows, vocab] fp32 with params[i] (device, [rows]).
// p_j = exp((l_j - max) / T); candidates are the tokens that pass top-k (the k largest p), top-p (the
// smallest set of most likely tokens whose mass reaches top_p times the mass left after top-k) and
// min-p (p_j >= min_p, p_max being 1); the answer is the first candidate in TOKEN-INDEX order whose
// cumulative candidate mass exceeds u times the total candidate mass. Deterministic: the same inputs
// always give the same token. Differences from the CPU Sampler (sampling/sampler.cpp):
//   - ties at a top-k or top-p threshold are all kept (the CPU keeps the lowest indices);
//   - the pick walks candidates in index order (the CPU walks them by probability), so one seed gives
//     other tokens, from the same distribution;
//   - masses are fixed point (p * 2^40, truncated): tokens with p < 2^-40 never count or win.
// NaN logits never win; -inf logits are never picked; a row with nothing above -inf answers 0.
// vocab <= 2^23. workspace: sample_rows_workspace_bytes(...) bytes (0 today; may be null).
size_t sample_rows_workspace_bytes(int rows, int vocab);
cudaError_t sample_rows(const float* logits, int rows, int vocab, const SampleRowParams* params, int32_t* out,
                        void* workspace, size_t workspace_bytes, cudaStream_t stream);

// Constrained decoding: for each row r of logits [rows, vocab] fp32 with mask_of_row[r] = m >= 0, the
// logits of tokens whose bit is 0 in masks[m] (mask_words uint32 per mask, bit i % 32 of word i / 32)
// become -inf; rows with m < 0 are untouched. Device pointers; mask_words >= ceil(vocab / 32).
cudaError_t apply_token_bitmask(float* logits, int rows, int vocab, const uint32_t* masks, int mask_words,
                                const int32_t* mask_of_row, cudaStream_t stream);

// The logprobs of rows whose tokens are chosen (sampling/logprobs.h has the rule): per row i of logits
// [rows, vocab] fp32, out[i] = log_softmax of the row at chosen[i] (device, [rows]) and its num_top
// (<= kMaxTopLogprobsDevice) largest entries, value descending, equal values by lower index. NaN logits
// are skipped; a row with nothing above -inf gives -inf everywhere. The sum of exp is fp32.
constexpr int kMaxTopLogprobsDevice = 20;
struct RowLogprobsOut {
    float chosen;
    int32_t num_top;
    int32_t top_ids[kMaxTopLogprobsDevice];
    float top_logprobs[kMaxTopLogprobsDevice];
};
cudaError_t row_logprobs(const float* logits, int rows, int vocab, const int32_t* chosen, int num_top,
                         RowLogprobsOut* out, cudaStream_t stream);

}  // namespace hichat::cuda
