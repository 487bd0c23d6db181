// A runner that samples "on the device" on the CPU, for the engine tests: the RowSampling rule of
// model_runner.h applied to a CpuRunner's logits.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "executor/cpu_runner.h"
#include "executor/model_runner.h"
#include "sampling/sampler.h"

namespace hichat::engine::testing_util {

// The RowSampling rule of model_runner.h on one row of logits.
inline int32_t pick(std::span<const float> logits, const executor::RowSampling& rs) {
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

// Claims to sample on the device: forward_sample() applies pick() to the CPU runner's logits. Inherits
// the default submit()/collect(), so the pipelined engine can drive it too.
class HostSamplingRunner final : public executor::ModelRunner {
public:
    explicit HostSamplingRunner(std::unique_ptr<executor::CpuRunner> inner) : inner_(std::move(inner)) {}
    const model::ModelConfig& model_config() const override { return inner_->model_config(); }
    int num_kv_blocks() const override { return inner_->num_kv_blocks(); }
    int kv_block_size_tokens() const override { return inner_->kv_block_size_tokens(); }
    void forward(const executor::ForwardBatch& batch, std::vector<float>& logits) override {
        ++num_host_steps;
        inner_->forward(batch, logits);
    }
    bool samples_on_device() const override { return true; }
    void forward_sample(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows,
                        std::vector<int32_t>& ids) override {
        ++num_device_steps;
        EXPECT_EQ(static_cast<int64_t>(rows.size()), batch.num_logit_rows());
        inner_->forward(batch, logits_);
        const size_t vocab = static_cast<size_t>(model_config().vocab_size);
        ids.clear();
        for (size_t r = 0; r < rows.size(); ++r) {
            if (rows[r].temperature > 0) draws.push_back(rows[r].u);
            ids.push_back(pick(std::span<const float>(logits_).subspan(r * vocab, vocab), rows[r]));
        }
    }
    std::atomic<int> num_host_steps{0}, num_device_steps{0};
    std::vector<float> draws;   // engine thread only; read after the request finished

private:
    std::unique_ptr<executor::CpuRunner> inner_;
    std::vector<float> logits_;
};

}  // namespace hichat::engine::testing_util
