// CudaRunner::Impl: the CUDA runner's state and the helpers its three source files share
// (cuda_runner.cpp: set-up, steps and the host side; cuda_runner_layers.cpp: the forward pass;
// cuda_runner_graphs.cpp: step metadata and decode graphs). Private to src/executor.
#pragma once

#include "executor/cuda_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_event.h"
#include "backend/cuda/cuda_graph.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/ops.h"
#include "base/check.h"
#include "executor/cpu_runner.h"
#include "executor/cuda_support.h"
#include "executor/cuda_weights.h"
#include "executor/kv_pool_size.h"

namespace hichat::executor {
namespace cuda_runner_detail {

using cuda::bf16;

template <typename T, typename Buffer>   // cuda::DeviceBuffer or TensorView
T* ptr(const Buffer& b) {
    return static_cast<T*>(b.data());
}

constexpr size_t kSampleWords = sizeof(cuda::SampleRowParams) / sizeof(int32_t);
static_assert(sizeof(cuda::SampleRowParams) % sizeof(int32_t) == 0);
static_assert(cuda::kMaxTopLogprobsDevice == sampling::kMaxTopLogprobs);

// One step's int32 metadata, packed in this order and copied to the device in one transfer. The
// offsets depend only on the counts, so a captured decode graph (fixed counts) always finds its data
// at the captured addresses.
struct StepLayout {
    size_t ids = 0, positions = 0, slots = 0, logit_rows = 0, cu_seqlens = 0, seq_lens_kv = 0, block_tables = 0,
           sampling = 0, total = 0;
    int num_tokens = 0, num_rows = 0;
    StepLayout() = default;
    // sampled: room for one cuda::SampleRowParams (5 words) per logit row.
    StepLayout(int num_tokens, int num_rows, int num_seqs, int table_stride, bool sampled)
        : num_tokens(num_tokens), num_rows(num_rows) {
        size_t at = 0;
        auto take = [&](size_t n) { size_t here = at; at += n; return here; };
        ids = take(static_cast<size_t>(num_tokens));
        positions = take(static_cast<size_t>(num_tokens));
        slots = take(static_cast<size_t>(num_tokens));
        logit_rows = take(static_cast<size_t>(num_rows));
        cu_seqlens = take(static_cast<size_t>(num_seqs) + 1);
        seq_lens_kv = take(static_cast<size_t>(num_seqs));
        block_tables = take(static_cast<size_t>(num_seqs) * table_stride);
        sampling = take(sampled ? static_cast<size_t>(num_rows) * kSampleWords : 0);
        total = at;
    }
};

// A decode step's graph: padded batch size and the power-of-two bucket of its longest context.
struct GraphKey {
    int batch, kv_len;
    bool sampled;   // sample_rows with per-row parameters, else argmax_rows
    bool picks;     // the graph ends with the pick; else with the logits (submit_forward(): pick() follows)
    auto operator<=>(const GraphKey&) const = default;
};

constexpr int kMinGraphKvLen = 256;

// FP8 GEMM: steps of up to kFp8GemvTokens tokens go to the FP8 GEMV; longer ones to cuBLASLt with
// the scale vectors applied by cuBLASLt itself (o_proj and down_proj added to x as beta = 1), or where
// it has no such algorithm to its unit-scale product (bf16), whose scales the next kernel applies:
// qkv_rope_kv_write, silu_mul(_fp8), or for o_proj and down_proj scale_fp8_product adding the product
// from fp8_product to x.
// Batch 1 through cuBLASLt as well (W8A8, as a measurement knob, 2026-12-07, H100) was slower, 4.146
// against 3.453 ms per 8B token, and failed the GEMV's small-step goldens (relative error 0.098 > 0.05).
constexpr int kFp8GemvTokens = 8;

// Batch sizes that have decode graphs: 1, 2, 4, 8, then every 8 up to 256, then every 32.
inline int graph_batch_bucket(int n) {
    if (n <= 8) return std::bit_ceil(static_cast<unsigned>(n));
    if (n <= 256) return (n + 7) / 8 * 8;
    return (n + 31) / 32 * 32;
}

}  // namespace cuda_runner_detail

using cuda_runner_detail::GraphKey;
using cuda_runner_detail::StepLayout;
using cuda_runner_detail::ptr;

struct CudaRunner::Impl {
    const model::ModelConfig& cfg;
    CudaRunnerConfig config;
    CudaWeights weights;
    cuda::Gemm gemm;
    cudaStream_t stream = nullptr;
    cudaStream_t copy_stream = nullptr;   // host-tier copies
    // Streamed layers: their weights go up on weight_stream into the two staging buffers in turn
    // (layer i of them into stage i % 2), each copy after the layer that used the stage before it is
    // done (freed) and before its own layer runs (loaded). A step's first copies wait for its start.
    cudaStream_t weight_stream = nullptr;
    std::array<cuda::DeviceBuffer, 2> stage;
    std::array<cuda::CudaEvent, 2> stage_loaded, stage_freed;
    cuda::CudaEvent step_begun;
    std::vector<CudaLayerWeights> staged;   // [streamed layers] views into their stage
    int num_device_layers = 0;              // the layers the GPU computes (and keeps KV for)
    std::unique_ptr<CpuRunner> cpu;         // the CPU's layers, when any
    cuda::PinnedBuffer host_x;              // the residual rows crossing to the CPU and back
    int num_blocks = 0, num_host_blocks = 0, max_blocks_per_seq = 0, max_logit_rows = 0, max_graph_batch = 0;
    int32_t scratch_block = 0;   // one KV block outside the pool: where padded decode rows write
    int64_t q_width = 0, kv_width = 0, qkv_width = 0;
    StepLayout layout;           // this step's metadata offsets

    cuda::DeviceBuffer kv;        // [layers][2][(num_blocks + 1) * block_size * kv_width] bf16 or E4M3
    std::vector<std::pair<float, float>> kv_scales;   // FP8 KV: each layer's k_scale, v_scale
    cuda::DeviceBuffer inv_freq;  // [head_dim / 2] fp32
    cuda::DeviceBuffer x, h, qkv, q, attn, gate_up, act, rows, row_norm, logits, ids, meta, attn_workspace,
        sample_workspace, logprobs,   // logprobs: [max tokens per step] cuda::RowLogprobsOut
        masks,                        // a masked step's [max_logit_rows] mask_of_row, then its masks
        act_q, act_scale,             // FP8 weights only: a step's quantized GEMM input and its row scales,
        fp8_product;                  // and [max tokens, hidden] bf16 for the unit-scale products of fp8_linear
    size_t attn_workspace_bytes = 0;
    cuda::PinnedBuffer host_logits;
    cuda::PinnedBuffer host_kv;   // [num_host_blocks][layers][2][block_size * kv_width] as the pool
    cuda::CudaEvent compute_done, copies_done;   // orders the copy stream after steps and steps after copies
    // Submitted steps, two at most in flight, take the two slots in turn: each has its own pinned
    // metadata (written while the other step runs) and ids, and an event after the ids' copy.
    struct Slot {
        cuda::PinnedBuffer meta, ids, logprobs, masks;
        cuda::CudaEvent done;
        int num_rows = 0;
        bool has_logprobs = false;   // the step computed row logprobs (some row asked)
    };
    std::array<Slot, 2> slots;
    int next_slot = 0, num_outstanding = 0;
    int last_submitted_rows = 0;  // logit rows of the last submitted step: what placeholders index
    std::map<GraphKey, cuda::CudaGraph> graphs;
    std::set<GraphKey> warmed;    // keys run once eagerly (plans made, kernels loaded), ready to capture
    std::vector<sampling::TokenLogprobs> collected_logprobs;   // of the last collected step
    // The step being submitted, from enqueue_forward() to end_step() (submit(), or submit_forward() to pick()).
    struct OpenStep {
        bool open = false;
        bool deferred = false;     // submit_forward(): the pick waits for pick()
        bool graph = false;        // a decode graph ran it
        int num_rows = 0;
        bool sampled = false;
        int num_top = -1;          // the most top logprobs a row asks for; -1: none
    } step;
    int mask_words = 0;            // ceil(vocab / 32)

    Impl(const model::Checkpoint& ckpt, const CudaRunnerConfig& c, CudaWeights w)
        : cfg(ckpt.config()),
          config(c),
          weights(std::move(w)),
          num_device_layers(static_cast<int>(weights.layers.size())),
          max_blocks_per_seq((c.max_context_tokens + c.kv_block_size_tokens - 1) / c.kv_block_size_tokens) {
        // A layer without calibrated scales takes 1.0 (choose_device()'s note says so).
        for (const model::LayerWeights& l : ckpt.weights().layers)
            kv_scales.emplace_back(l.k_scale > 0.0f ? l.k_scale : 1.0f, l.v_scale > 0.0f ? l.v_scale : 1.0f);
    }

    Status allocate();
    Status allocate_stages();
    // The logits of every logit row, to the host; waits for the step.
    void forward(const ForwardBatch& batch, std::vector<float>& logits);
    // Enqueues a step whose ids (argmax, or sampled by `rows` where any row samples) are copied to the
    // next slot; returns at once.
    void submit(const ForwardBatch& batch, std::span<const RowSampling> rows);
    // The step's forward pass, and unless defer_pick its pick; then end_step() (after pick()'s masks).
    void enqueue_forward(const ForwardBatch& batch, std::span<const RowSampling> rows, bool defer_pick);
    void pick(std::span<const uint32_t> masks, int words, std::span<const int32_t> mask_of_row);
    // A deferred step's masks and pick; then every step's ids (and logprobs) to its slot and its event.
    void end_step(std::span<const uint32_t> masks, std::span<const int32_t> mask_of_row);
    void collect(std::vector<int32_t>& ids);
    // Runs decode steps of every graph batch bucket, greedy and sampled, at the shortest context bucket
    // (one-token sequences on the scratch block): each key's first step runs eagerly and its second
    // captures the graph.
    void capture_short_context_graphs();
    // The graph for a pure decode step whose ids come back (every sequence one token), if it has one.
    std::optional<GraphKey> decode_graph_key(const ForwardBatch& batch, bool sampled, bool picks) const;
    // Packs ids, positions, slots, logit rows, sequence boundaries and block tables into the pinned
    // `host_meta` and copies it to the device; with a graph key, pads to key.batch one-token sequences
    // (writing to the scratch block) and sizes the tables for key.kv_len tokens.
    void upload_metadata(const ForwardBatch& batch, const std::optional<GraphKey>& key,
                         std::span<const RowSampling> sampling, const cuda::PinnedBuffer& host_meta,
                         cuda::AttentionMetadata& m);
    // Embedding (placeholder ids resolved from the last step's device ids) and the layers; the CPU's
    // layers (when any) run before this returns, on `batch`.
    void enqueue_layers(const cuda::AttentionMetadata& m, const ForwardBatch& batch);
    // The residual rows to the host, the CPU's layers, and back (the host waits for the GPU's part).
    void run_cpu_layers(const ForwardBatch& batch, int num_tokens);
    // Final norm and LM head of logit rows [begin, begin + n) into `logits`. Logit rows are tokens in
    // increasing order, so when every token is one (decode steps) row i is token i: no gather.
    void enqueue_lm_head(int begin, int n);
    // The ids of logit rows [begin, begin + n) (sampled by the step's parameters, or argmax) into the
    // device ids at `begin`.
    void enqueue_pick(int begin, int n, bool sampled);
    // The logprobs of logit rows [begin, begin + n), whose logits are in `logits` and ids in `ids`.
    void enqueue_logprobs(int begin, int n, int num_top);
    void run_layer(int layer, const CudaLayerWeights& w, const cuda::AttentionMetadata& m, int num_tokens);
    // Streamed layer i's weights (its pinned blob) into its stage on weight_stream, once the stage is free.
    void enqueue_weight_copy(int i, bool wait_freed);
    void norm(const TensorView& weight, int num_tokens, bool fp8_input);
    void run_mlp(const CudaLayerWeights& w, int num_tokens);
    bool fp8_gemm_into(const CudaLinear& w, const cuda::DeviceBuffer& out, int t, int n, int k);
    // Whether an FP8 linear layer of t tokens takes the FP8 GEMM (cuBLASLt) rather than the FP8 GEMV.
    bool fp8_gemm(const CudaLinear& w, const cuda::DeviceBuffer& in, const void* out, int t, int k) const;
    void fp8_linear(const CudaLinear& w, void* out, cuda::GemmOut type, int t, int n, int k, bool accumulate);
    void linear(const CudaLinear& w, const cuda::DeviceBuffer& in, void* out, cuda::GemmOut type, int t, int n, int k,
                bool accumulate);
    void enqueue_decode_graph(const GraphKey& key, const cuda::AttentionMetadata& m, const ForwardBatch& batch);
    void copy_kv_blocks(std::span<const kv::BlockCopy> copies);
    size_t kv_elem_bytes() const { return config.kv_fp8 ? 1 : 2; }
    // K of one layer for one block: one row of a block's 2D copy.
    size_t kv_block_row_bytes() const {
        return static_cast<size_t>(config.kv_block_size_tokens) * static_cast<size_t>(kv_width) * kv_elem_bytes();
    }
    void* k_cache(int layer) const { return ptr<char>(kv) + kv_layer_bytes() * (2 * layer); }
    void* v_cache(int layer) const { return ptr<char>(kv) + kv_layer_bytes() * (2 * layer + 1); }
    size_t kv_layer_bytes() const {
        return static_cast<size_t>(num_blocks + 1) * config.kv_block_size_tokens * static_cast<size_t>(kv_width) *
               kv_elem_bytes();
    }
    const int32_t* device_meta(size_t offset) const { return ptr<int32_t>(meta) + offset; }
};

}  // namespace hichat::executor
