// ModelRunner: what the engine needs from a backend: one forward pass over a batch of sequences with
// paged KV. CpuRunner implements it; the CUDA runner will too. Engine thread only.
#pragma once

#include <vector>

#include "executor/forward_batch.h"
#include "model/model_config.h"

namespace hichat::executor {

class ModelRunner {
public:
    virtual ~ModelRunner() = default;
    virtual const model::ModelConfig& model_config() const = 0;
    virtual int num_kv_blocks() const = 0;
    virtual int kv_block_size_tokens() const = 0;
    // Appends each sequence's tokens to its KV blocks; logits [batch.num_logit_rows(), vocab].
    virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;

    // forward(), then the argmax of each logits row (lowest index on ties): for batches that are all
    // greedy. A backend may find the argmax where the logits are (the GPU) and return only the ids.
    virtual void forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids);

private:
    std::vector<float> argmax_logits_;  // scratch of the default forward_argmax
};

}  // namespace hichat::executor
