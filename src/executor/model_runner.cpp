#include "executor/model_runner.h"

#include <algorithm>

#include "base/check.h"
#include "sampling/sampler.h"

namespace hichat::executor {

void ModelRunner::forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids) {
    forward(batch, argmax_logits_);
    const auto vocab = static_cast<size_t>(model_config().vocab_size);
    const size_t rows = argmax_logits_.size() / vocab;
    ids.resize(rows);
    for (size_t r = 0; r < rows; ++r) {
        const float* row = argmax_logits_.data() + r * vocab;
        size_t best = 0;
        for (size_t i = 1; i < vocab; ++i) {
            if (row[i] > row[best]) best = i;
        }
        ids[r] = static_cast<int32_t>(best);
    }
}

void ModelRunner::forward_sample(const ForwardBatch&, std::span<const RowSampling>, std::vector<int32_t>&) {
    CHECK(false) << "forward_sample() on a runner that does not sample on the device";
}

void ModelRunner::submit_forward(const ForwardBatch&, std::span<const RowSampling>) {
    CHECK(false) << "submit_forward() on a runner that does not sample on the device";
}

void ModelRunner::pick(std::span<const uint32_t>, int, std::span<const int32_t>) {
    CHECK(false) << "pick() on a runner that does not sample on the device";
}

void ModelRunner::copy_kv_blocks(std::span<const kv::BlockCopy> copies) {
    CHECK(copies.empty()) << "copy_kv_blocks() on a runner without a host KV tier";
}

// The default runs the step here, so the previous step's ids are already known on the host:
// placeholders are replaced from last_ids_ in a copy of the batch's tokens.
void ModelRunner::submit(const ForwardBatch& batch, std::span<const RowSampling> rows) {
    CHECK_LT(outstanding_.size(), 2u) << "submit() with two steps outstanding";
    CHECK_EQ(static_cast<int64_t>(rows.size()), batch.num_logit_rows());
    ForwardBatch resolved = batch;
    std::vector<std::vector<int32_t>> owned(batch.seqs.size());  // [num_seqs][num_tokens] resolved copies
    for (size_t s = 0; s < batch.seqs.size(); ++s) {
        const std::span<const int32_t> tokens = batch.seqs[s].tokens;
        if (std::none_of(tokens.begin(), tokens.end(), [](int32_t t) { return t < 0; })) continue;
        owned[s].assign(tokens.begin(), tokens.end());
        for (int32_t& t : owned[s]) {
            if (t >= 0) continue;
            const int64_t row = -static_cast<int64_t>(t) - 1;
            CHECK_LT(row, static_cast<int64_t>(last_ids_.size()))
                << "placeholder " << t << " refers past the previous step's rows";
            t = last_ids_[static_cast<size_t>(row)];
        }
        resolved.seqs[s].tokens = owned[s];
    }
    const bool all_greedy =
        std::all_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.temperature <= 0.0f; });
    const bool logprobs =
        std::any_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.num_logprobs >= 0; });
    std::vector<int32_t> ids;
    std::vector<sampling::TokenLogprobs> step_logprobs;
    if (logprobs) {  // greedy here (a runner that samples on the device overrides submit): the logits are on the host
        CHECK(all_greedy) << "default submit(): sampled rows with logprobs";
        forward(resolved, argmax_logits_);
        const auto vocab = static_cast<size_t>(model_config().vocab_size);
        ids.resize(rows.size());
        step_logprobs.resize(rows.size());
        for (size_t r = 0; r < rows.size(); ++r) {
            const std::span<const float> row(argmax_logits_.data() + r * vocab, vocab);
            ids[r] = sampling::argmax(row);
            if (rows[r].num_logprobs >= 0) step_logprobs[r] = sampling::compute_logprobs(row, ids[r], rows[r].num_logprobs);
        }
    } else if (all_greedy) {
        forward_argmax(resolved, ids);
    } else {
        forward_sample(resolved, rows, ids);
    }
    last_ids_ = ids;
    outstanding_.push_back(std::move(ids));
    outstanding_logprobs_.push_back(std::move(step_logprobs));
}

void ModelRunner::collect(std::vector<int32_t>& ids) {
    CHECK(!outstanding_.empty()) << "collect() with no step outstanding";
    ids = std::move(outstanding_.front());
    outstanding_.erase(outstanding_.begin());
    collected_logprobs_ = std::move(outstanding_logprobs_.front());
    outstanding_logprobs_.erase(outstanding_logprobs_.begin());
}

}  // namespace hichat::executor
