// The engine's device-sampling path (ModelRunner::forward_sample), exercised without a GPU: a runner
// that claims to sample on the device and applies the RowSampling rule to the CPU runner's logits.
// Checks which rows and random draws the engine hands over, and when it keeps sampling on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace hichat::engine {
namespace {

// The RowSampling rule of model_runner.h on one row of logits.
int32_t pick(std::span<const float> logits, const executor::RowSampling& rs) {
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

class DeviceSamplingTest : public testing_util::TinyModelTest {
protected:
    void SetUp() override {
        TinyModelTest::SetUp();
        if (HasFatalFailure()) return;
        auto runner = std::make_unique<HostSamplingRunner>(std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 64}));
        runner_ = runner.get();
        engine_ = std::make_unique<Engine>(std::move(runner), *tokenizer_, EngineConfig{});
    }

    std::vector<int32_t> run(sampling::SamplingParams params, int max_tokens) {
        auto sink = std::make_shared<testing_util::CollectingSink>();
        Request r;
        r.id = {next_id_++};
        r.prompt = golden_["prompt"].get<std::vector<int32_t>>();
        r.sampling = params;
        r.max_tokens = max_tokens;
        r.sink = sink;
        EXPECT_EQ(engine_->submit(std::move(r)), Engine::Admission::kAccepted);
        EXPECT_TRUE(sink->wait());
        return sink->tokens;
    }

    HostSamplingRunner* runner_ = nullptr;
    std::unique_ptr<Engine> engine_;
    uint64_t next_id_ = 1;
};

TEST_F(DeviceSamplingTest, TopKOneOnTheDeviceEqualsGreedy) {
    const auto expected = golden_["greedy"].get<std::vector<int32_t>>();
    const auto got = run({.temperature = 0.8f, .top_k = 1, .seed = 3}, static_cast<int>(expected.size()));
    EXPECT_EQ(got, expected);
    EXPECT_GT(runner_->num_device_steps.load(), 0);
    EXPECT_EQ(runner_->num_host_steps.load(), 0);
}

// The engine draws each u from the sequence's seeded Rng, one per sampled token, in order.
TEST_F(DeviceSamplingTest, DrawsComeFromTheSeededRngInOrder) {
    const int n = 12;
    const auto first = run({.temperature = 1.5f, .top_p = 0.9f, .min_p = 0.01f, .seed = 42}, n);
    ASSERT_EQ(static_cast<int>(runner_->draws.size()), n);
    sampling::Rng rng(42);
    for (int i = 0; i < n; ++i) EXPECT_FLOAT_EQ(runner_->draws[static_cast<size_t>(i)], static_cast<float>(rng.next_unit()));
    EXPECT_EQ(run({.temperature = 1.5f, .top_p = 0.9f, .min_p = 0.01f, .seed = 42}, n), first);
    EXPECT_EQ(runner_->num_host_steps.load(), 0);
}

// Penalties need the token history: those requests keep sampling on the host.
TEST_F(DeviceSamplingTest, PenaltiesStayOnTheHost) {
    run({.temperature = 1.0f, .repetition_penalty = 1.3f, .seed = 1}, 6);
    EXPECT_GT(runner_->num_host_steps.load(), 0);
    EXPECT_EQ(runner_->num_device_steps.load(), 0);
}

}  // namespace
}  // namespace hichat::engine
