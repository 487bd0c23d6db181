// CudaRunner: the Llama-family forward pass on one CUDA device, behind the same ModelRunner
// interface as CpuRunner. Owns the device weights (uploaded once as bf16, q/k/v and gate/up fused), the
// paged KV pool (bf16, or E4M3 with per-layer scales), the workspaces for the largest step, pinned staging buffers, the pinned host KV
// tier, a compute stream and a copy stream (host-tier copies, ordered by events); no
// device allocation after construction except the decode graphs, captured on first use for each
// (padded batch size, power-of-two context) bucket (or at start for the shortest contexts). Engine (or CLI) thread only.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "executor/model_runner.h"
#include "model/checkpoint.h"

namespace hichat::executor {

struct CudaRunnerConfig {
    int device = 0;
    double gpu_memory_fraction = 0.9;    // of the free memory after weights, for the KV pool
    int num_kv_blocks = 0;               // 0: from gpu_memory_fraction, at most max_num_seqs full contexts
    int kv_block_size_tokens = 16;
    int max_num_tokens_per_step = 8192;  // workspace size (prefill chunk + decodes)
    int max_num_seqs = 256;
    int max_context_tokens = 0;          // 0: the model's max_position_embeddings
    bool use_cuda_graphs = true;         // decode steps replay captured graphs (per batch / context bucket)
    // create() captures the decode graphs of every batch bucket for the shortest context bucket,
    // greedy and sampled, with steps of one-token sequences on the scratch block; other graphs are
    // captured on first use. A capture at serving time holds up the host for longer than a decode
    // step of the 8B takes, and every running stream's next token waits with it. Not with streamed or
    // CPU layers (their steps dwarf a capture; CPU layers have no graphs).
    bool capture_graphs_at_start = false;
    // The KV cache in FP8 (E4M3, half the bytes of bf16): written as e4m3(k / k_scale) with each layer's
    // k_scale / v_scale from the checkpoint (1.0 where it has none), read by the FP8 attention kernels.
    bool kv_fp8 = false;
    // The host tier: pinned host memory for this many bytes of KV blocks (0: none). With a host tier the
    // device pool holds at most cudaDevAttrMaxPitch / (one block's row of one layer's K) blocks, so
    // that a block moves as one 2D copy (2 * layers rows of block_size * kv_width elements).
    int64_t host_kv_cache_bytes = 0;
    // Streamed layers (issue 21): the last this many decoder layers keep their weights in pinned host
    // memory; each step copies them to the device layer by layer on a copy stream, two staging buffers
    // in turn, each copy overlapping the compute of the layer before. Their KV stays on the device.
    int num_streamed_layers = 0;
    // CPU layers (issue 21): the last this many decoder layers run on the CPU (CpuRunner, their KV in
    // host memory as bf16, cpu_threads threads, 0: all): each step copies the residual rows to pinned
    // host memory after the GPU's layers, waits, runs them, and copies the rows back for the final norm
    // and lm_head on the GPU. Such a runner has no decode graphs and no host KV tier.
    int num_cpu_layers = 0;
    int cpu_threads = 0;
    // > 0: the KV pool's budget in bytes (a --gpu-memory-gb plan's remainder), in place of
    // gpu_memory_fraction of the free memory.
    int64_t kv_budget_bytes = 0;
};

class CudaRunner final : public ModelRunner {
public:
    // Errors: a model shape or step size the kernels do not support (cuda_unsupported_reason(),
    // kUnimplemented), no CUDA device, not enough device memory.
    static Result<std::unique_ptr<CudaRunner>> create(const model::Checkpoint& checkpoint, const CudaRunnerConfig& config);
    ~CudaRunner() override;

    const model::ModelConfig& model_config() const override;
    int num_kv_blocks() const override;
    int kv_block_size_tokens() const override;
    int num_host_kv_blocks() const override;
    // One cudaMemcpy2DAsync per block on the copy stream, after an event recorded on the compute stream
    // (every step submitted so far); later steps wait for an event after the copies. The host never waits.
    void copy_kv_blocks(std::span<const kv::BlockCopy> copies) override;
    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
    // The argmax runs on the device: only the ids [rows] come back.
    void forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids) override;
    // Sampling on the device (cuda::sample_rows): only the ids come back.
    bool samples_on_device() const override { return true; }
    void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                        std::vector<int32_t>& ids) override;
    // Pipelined steps: submit() enqueues the step (metadata copy, graph or kernels, ids copy into one
    // of two pinned slots) and returns; placeholder tokens read the previous step's ids on the device.
    bool runs_async() const override { return true; }
    void submit(const ForwardBatch& batch, std::span<const RowSampling> rows) override;
    void collect(std::vector<int32_t>& ids) override;
    // The forward pass (or a decode graph that ends at the logits); pick() uploads the masks from the
    // slot's pinned buffer, runs cuda::apply_token_bitmask, then the pick, logprobs and ids copy.
    void submit_forward(const ForwardBatch& batch, std::span<const RowSampling> rows) override;
    void pick(std::span<const uint32_t> masks, int mask_words, std::span<const int32_t> mask_of_row) override;
    // Computed on the device after the pick (cuda::row_logprobs), copied back with the ids.
    std::span<const sampling::TokenLogprobs> step_logprobs() const override;
    int64_t num_graphs_captured() const override;

private:
    struct Impl;
    explicit CudaRunner(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
    std::vector<RowSampling> greedy_rows_;   // forward_argmax's rows
};

}  // namespace hichat::executor
