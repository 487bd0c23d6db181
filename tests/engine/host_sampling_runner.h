// A runner that samples "on the device" on the CPU, for the engine tests: the RowSampling rule of
// model_runner.h applied to a CpuRunner's logits.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "executor/cpu_runner.h"
#include "executor/model_runner.h"
#include "sampling/logprobs.h"
#include "sampling/sampler.h"

namespace hichat::engine::testing_util {

// The RowSampling rule of model_runner.h on one row of logits.
inline int32_t pick_row(std::span<const float> logits, const executor::RowSampling& rs) {
    if (rs.temperature <= 0.0f) return sampling::argmax(logits);
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp((logits[i] - max_logit) / rs.temperature);
    std::vector<size_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    size_t keep = order.size();
    if (rs.top_k > 0) keep = std::min(keep, static_cast<size_t>(rs.top_k));
    double total = 0;
    for (size_t i = 0; i < keep; ++i) total += p[order[i]];
    if (rs.top_p < 1.0f) {
        double mass = 0;
        size_t n = 0;
        while (n < keep && mass < rs.top_p * total) mass += p[order[n++]];
        keep = std::max<size_t>(n, 1);
    }
    std::vector<bool> candidate(p.size(), false);
    for (size_t i = 0; i < keep; ++i) candidate[order[i]] = p[order[i]] >= rs.min_p;   // p_max is 1
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) sum += candidate[i] ? p[i] : 0.0;
    double cumulative = 0;
    int32_t last = -1;
    for (size_t i = 0; i < p.size(); ++i) {
        if (!candidate[i]) continue;
        cumulative += p[i];
        last = static_cast<int32_t>(i);
        if (cumulative > rs.u * sum) return last;
    }
    return last;
}

// A runner in front of a CpuRunner that claims to sample on the device; shape and KV pool are the
// inner runner's.
class CpuBackedRunner : public executor::ModelRunner {
public:
    explicit CpuBackedRunner(std::unique_ptr<executor::CpuRunner> inner) : inner_(std::move(inner)) {}
    const model::ModelConfig& model_config() const override { return inner_->model_config(); }
    int num_kv_blocks() const override { return inner_->num_kv_blocks(); }
    int kv_block_size_tokens() const override { return inner_->kv_block_size_tokens(); }
    bool samples_on_device() const override { return true; }

protected:
    std::unique_ptr<executor::CpuRunner> inner_;
};

// Claims to sample on the device: forward_sample() applies pick_row() to the CPU runner's logits. Inherits
// the default submit()/collect(), so the pipelined engine can drive it too.
class HostSamplingRunner final : public CpuBackedRunner {
public:
    using CpuBackedRunner::CpuBackedRunner;
    void forward(const executor::ForwardBatch& batch, std::vector<float>& logits) override {
        ++num_host_steps;
        inner_->forward(batch, logits);
    }
    void forward_sample(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows,
                        std::vector<int32_t>& ids) override {
        ++num_device_steps;
        EXPECT_EQ(static_cast<int64_t>(rows.size()), batch.num_logit_rows());
        inner_->forward(batch, logits_);
        const size_t vocab = static_cast<size_t>(model_config().vocab_size);
        ids.clear();
        for (size_t r = 0; r < rows.size(); ++r) {
            if (rows[r].temperature > 0) draws.push_back(rows[r].u);
            ids.push_back(pick_row(std::span<const float>(logits_).subspan(r * vocab, vocab), rows[r]));
        }
    }
    std::atomic<int> num_host_steps{0}, num_device_steps{0};
    std::vector<float> draws;   // engine thread only; read after the request finished

private:
    std::vector<float> logits_;
};

// A runner with the pipelined interface of the CUDA runner on the CPU: submit(), submit_forward() and
// pick() (masks applied to host logits), collect(); ids by pick_row(), logprobs of every row that asks
// (of the masked row), placeholders resolved from the last picked step. Counts the masked steps and
// those submitted while the step before was still outstanding (the overlap the engine keeps).
class DeferredPickRunner final : public CpuBackedRunner {
public:
    using CpuBackedRunner::CpuBackedRunner;
    void forward(const executor::ForwardBatch& batch, std::vector<float>& logits) override {
        EXPECT_TRUE(outstanding_.empty() && !open_);
        inner_->forward(batch, logits);
    }
    void forward_sample(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows,
                        std::vector<int32_t>& ids) override {
        submit(batch, rows);
        collect(ids);
    }
    void submit(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows) override {
        submit_forward(batch, rows);
        end_step({}, {});
    }
    void submit_forward(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows) override {
        EXPECT_LT(outstanding_.size(), 2u);
        EXPECT_FALSE(open_) << "submit before the last submit_forward() was picked";
        EXPECT_EQ(static_cast<int64_t>(rows.size()), batch.num_logit_rows());
        executor::ForwardBatch resolved = batch;
        std::vector<std::vector<int32_t>> owned(batch.seqs.size());
        for (size_t s = 0; s < batch.seqs.size(); ++s) {
            owned[s].assign(batch.seqs[s].tokens.begin(), batch.seqs[s].tokens.end());
            for (int32_t& t : owned[s]) {
                if (t < 0) t = last_ids_.at(static_cast<size_t>(-t - 1));
            }
            resolved.seqs[s].tokens = owned[s];
        }
        inner_->forward(resolved, logits_);
        rows_.assign(rows.begin(), rows.end());
        overlapped_ = !outstanding_.empty();
        open_ = true;
    }
    void pick(std::span<const uint32_t> masks, int mask_words, std::span<const int32_t> mask_of_row) override {
        EXPECT_TRUE(open_) << "pick() without submit_forward()";
        EXPECT_EQ(mask_words, (model_config().vocab_size + 31) / 32);
        EXPECT_EQ(mask_of_row.size(), rows_.size());
        ++num_masked_steps;
        if (overlapped_) ++num_overlapped_masked_steps;
        const size_t vocab = static_cast<size_t>(model_config().vocab_size);
        for (size_t r = 0; r < mask_of_row.size(); ++r) {
            if (mask_of_row[r] < 0) continue;
            const uint32_t* bits = masks.data() + static_cast<size_t>(mask_of_row[r]) * static_cast<size_t>(mask_words);
            for (size_t t = 0; t < vocab; ++t) {
                if (!(bits[t / 32] >> (t % 32) & 1u)) logits_[r * vocab + t] = -std::numeric_limits<float>::infinity();
            }
        }
        end_step(masks, mask_of_row);
    }
    void collect(std::vector<int32_t>& ids) override {
        EXPECT_FALSE(outstanding_.empty());
        ids = std::move(outstanding_.front().first);
        collected_ = std::move(outstanding_.front().second);
        outstanding_.erase(outstanding_.begin());
    }
    std::span<const sampling::TokenLogprobs> step_logprobs() const override { return collected_; }

    int num_masked_steps = 0, num_overlapped_masked_steps = 0;   // engine thread; read after the requests

private:
    void end_step(std::span<const uint32_t>, std::span<const int32_t>) {
        const size_t vocab = static_cast<size_t>(model_config().vocab_size);
        std::vector<int32_t> ids;
        std::vector<sampling::TokenLogprobs> logprobs(rows_.size());
        for (size_t r = 0; r < rows_.size(); ++r) {
            const std::span<const float> row = std::span<const float>(logits_).subspan(r * vocab, vocab);
            ids.push_back(pick_row(row, rows_[r]));
            if (rows_[r].num_logprobs >= 0) logprobs[r] = sampling::compute_logprobs(row, ids.back(), rows_[r].num_logprobs);
        }
        last_ids_ = ids;
        outstanding_.emplace_back(std::move(ids), std::move(logprobs));
        open_ = false;
    }

    std::vector<float> logits_;
    std::vector<executor::RowSampling> rows_;
    std::vector<int32_t> last_ids_;
    std::vector<std::pair<std::vector<int32_t>, std::vector<sampling::TokenLogprobs>>> outstanding_;
    std::vector<sampling::TokenLogprobs> collected_;
    bool open_ = false, overlapped_ = false;
};

}  // namespace hichat::engine::testing_util
