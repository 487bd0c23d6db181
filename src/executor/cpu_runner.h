// CpuRunner: the decoder-only transformer forward pass (Llama, Mistral, Qwen2, Qwen3) on the CPU.
// Owns the thread pool, the paged KV pool and the activation workspaces; copies the Checkpoint's
// linear weights and lm_head into huge pages at construction (FP8 dequantized to bf16 on the way,
// model/host_weights.h). Engine (or CLI) thread only; the checkpoint must outlive it.
#pragma once

#include <vector>

#include "base/thread_pool.h"
#include "executor/cpu_kv_pool.h"
#include "executor/forward_batch.h"
#include "executor/model_runner.h"
#include "model/checkpoint.h"
#include "model/host_weights.h"

namespace hichat::executor {

struct CpuRunnerConfig {
    int num_threads = 0;           // 0: every hardware thread
    int num_kv_blocks = 64;        // KV pool size; see CpuKvPool::bytes_per_token for the memory
    int kv_block_size_tokens = 16;
    DType kv_dtype = kCpuKvAutoDtype;  // the KV pool's elements: kBF16, kF16 or kF32
    int num_host_kv_blocks = 0;    // a host tier: a second store that blocks are copied to and from
                                   // (the device pool is host memory already: for tests of the tier)
    // > 0: this runner holds and runs only layers [first_layer, num_layers) through run_layers(), for
    // a CUDA run that keeps its first layers, the embedding and the lm_head on the GPU (issue 21);
    // forward() is then refused (CHECK).
    int first_layer = 0;
};

class CpuRunner final : public ModelRunner {
public:
    CpuRunner(const model::Checkpoint& checkpoint, const CpuRunnerConfig& config);

    const model::ModelConfig& model_config() const override { return cfg_; }
    int num_kv_blocks() const override { return kv_.num_blocks(); }
    int kv_block_size_tokens() const override { return kv_.block_size_tokens(); }
    int num_host_kv_blocks() const override { return num_host_blocks_; }
    // Copies at once (steps run inside submit(), so every earlier step is done).
    void copy_kv_blocks(std::span<const kv::BlockCopy> copies) override;

    // Runs the batch: appends each sequence's tokens to its KV blocks and writes logits
    // [batch.num_logit_rows(), vocab] into `logits` (resized). Positions must continue each
    // sequence's cached prefix and fit its block table (CHECKed: the scheduler guarantees it).
    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;

    // Layers [first_layer, num_layers) on the residual rows `x` ([batch.num_tokens(), hidden] fp32, in
    // the batch's token order), in place; appends each sequence's K/V of those layers to its blocks.
    void run_layers(const ForwardBatch& batch, float* x);

private:
    struct Workspace {
        std::vector<float> x, h, q, k, v, attn, gate, up, rows;
        std::vector<float> rope;  // [tokens, head_dim]: cos | sin of each token's RoPE angles
        std::vector<int32_t> positions;
    };

    void prepare(const ForwardBatch& batch);
    void run_layer(int layer, const ForwardBatch& batch);
    void attention(int layer, const ForwardBatch& batch);
    void compute_logits(const ForwardBatch& batch, std::vector<float>& logits);

    const model::ModelConfig& cfg_;
    int first_layer_;
    model::HostWeights host_weights_;
    const model::ModelWeights& weights_;  // host_weights_'s
    std::vector<float> inv_freq_;  // [head_dim / 2]
    ThreadPool pool_;
    CpuKvPool kv_;
    int num_host_blocks_;
    std::vector<std::byte> host_kv_;  // [num_host_blocks_][kv_.block_bytes()]
    Workspace ws_;
};

// A block table covering positions [0, num_tokens) with blocks 0, 1, 2...: for callers that run one
// sequence alone (CLI, tests) in a runner of at least that many blocks.
std::vector<int32_t> identity_block_table(int num_tokens, int block_size_tokens);

}  // namespace hichat::executor
