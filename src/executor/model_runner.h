// ModelRunner: what the engine needs from a backend: one forward pass over a batch of sequences with
// paged KV. CpuRunner implements it; the CUDA runner will too. Engine thread only.
#pragma once

#include <span>
#include <vector>

#include "executor/forward_batch.h"
#include "kv/block_copy.h"
#include "model/model_config.h"
#include "sampling/logprobs.h"

namespace hichat::executor {

// One logit row's token choice when the backend samples where the logits are (no penalties):
// temperature 0 is the argmax; otherwise p ~ exp(logit / temperature) filtered by top-k, top-p and
// min-p, and the token whose cumulative mass over the candidates, in token order, first exceeds u
// times their total (u in [0, 1), drawn by the sequence's seeded Rng on the host).
struct RowSampling {
    float temperature = 0.0f;
    int top_k = 0;
    float top_p = 1.0f;
    float min_p = 0.0f;
    float u = 0.0f;
    int num_logprobs = -1;  // >= 0: the row's sampling::TokenLogprobs, with this many top entries
};

class ModelRunner {
public:
    virtual ~ModelRunner() = default;
    virtual const model::ModelConfig& model_config() const = 0;
    virtual int num_kv_blocks() const = 0;
    virtual int kv_block_size_tokens() const = 0;
    // Blocks of the host-memory KV tier (0: none): host slots [0, n) for kv::BlockCopy.
    virtual int num_host_kv_blocks() const { return 0; }
    // Runs `copies` in order, after the work of every step submitted before and before that of any step
    // submitted after; returns without waiting for them. Only for runners with a host tier.
    virtual void copy_kv_blocks(std::span<const kv::BlockCopy> copies);
    // Appends each sequence's tokens to its KV blocks; logits [batch.num_logit_rows(), vocab].
    virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;

    // forward(), then the argmax of each logits row (lowest index on ties): for batches that are all
    // greedy. A backend may find the argmax where the logits are (the GPU) and return only the ids.
    virtual void forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids);

    // Whether forward_sample() is available (the CUDA runner: sampling on the GPU, ids only back).
    virtual bool samples_on_device() const { return false; }
    // forward(), then each logit row's token by rows[r] ([batch.num_logit_rows()]). Only for runners
    // whose samples_on_device() is true.
    virtual void forward_sample(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                std::vector<int32_t>& ids);

    // Pipelined steps. submit() starts a forward pass whose ids come back, in order, from collect():
    // per logit row, the argmax where rows[r].temperature is 0, else forward_sample()'s rule. rows:
    // [batch.num_logit_rows()]; non-greedy rows only where samples_on_device(). A token < 0 in the batch,
    // -(r + 1), stands for the id that the previously submitted step picks for its logit row r: the
    // caller may submit step N + 1 before collecting step N (at most two steps outstanding) and the
    // runner resolves it where the ids are. The batch's spans are read before submit() returns.
    // The default runs the step inside submit(); runs_async() runners return at once.
    virtual bool runs_async() const { return false; }
    virtual void submit(const ForwardBatch& batch, std::span<const RowSampling> rows);
    // Waits for the oldest outstanding step; ids: [its num_logit_rows()].
    virtual void collect(std::vector<int32_t>& ids);

    // A pipelined step whose rows are masked (constrained decoding), for runners that sample on the
    // device: submit_forward() starts the forward pass as submit() does but keeps the logits where they
    // are; pick() then sets the logits of the tokens each row's mask disallows to -inf and picks the ids
    // (and logprobs) as submit() would, and the step counts as submitted. In between the caller may
    // collect() the step before (whose tokens the masks follow from); nothing else. masks: [number of
    // masks][mask_words] bits, token t allowed where bit t % 32 of word t / 32 is set (mask_words =
    // ceil(vocab / 32)); mask_of_row: [rows], the mask of each logit row, or -1 for none. The step has
    // at most the runner's max_num_seqs logit rows (the CUDA runner keeps them all for the pick).
    virtual void submit_forward(const ForwardBatch& batch, std::span<const RowSampling> rows);
    virtual void pick(std::span<const uint32_t> masks, int mask_words, std::span<const int32_t> mask_of_row);

    // The logprobs of the step whose ids the last forward_sample() or collect() returned, computed where
    // its ids were picked: [its num_logit_rows()] when a row's RowSampling asked (num_logprobs >= 0),
    // meaningful for those rows only; empty when none asked.
    virtual std::span<const sampling::TokenLogprobs> step_logprobs() const { return collected_logprobs_; }

    // Step graphs captured so far (the CUDA runner's decode graphs, one per batch and context bucket):
    // a capture holds up the host, and so the step that runs beside it.
    virtual int64_t num_graphs_captured() const { return 0; }

private:
    std::vector<float> argmax_logits_;  // scratch of the default forward_argmax
    std::vector<std::vector<int32_t>> outstanding_;  // default submit(): ids of the uncollected steps
    std::vector<int32_t> last_ids_;                  // default submit(): ids of the last submitted step
    std::vector<std::vector<sampling::TokenLogprobs>> outstanding_logprobs_;  // default submit(), per step
    std::vector<sampling::TokenLogprobs> collected_logprobs_;
};

}  // namespace hichat::executor
