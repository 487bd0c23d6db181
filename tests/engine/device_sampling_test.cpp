// The engine's device-sampling path (ModelRunner::forward_sample), exercised without a GPU: a runner
// that claims to sample on the device and applies the RowSampling rule to the CPU runner's logits.
// Checks which rows and random draws the engine hands over, and when it keeps sampling on the host.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"
#include "host_sampling_runner.h"
#include "sampling/rng.h"

namespace hichat::engine {
namespace {

using testing_util::HostSamplingRunner;

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

// A logit_bias is applied by the host sampler only: a biased request (sampled or greedy) never goes to
// the device path, and its bias takes effect (+100 forces the token every step).
TEST_F(DeviceSamplingTest, LogitBiasStaysOnTheHost) {
    EXPECT_EQ(run({.temperature = 1.0f, .seed = 1, .logit_bias = {{.token = 9, .bias = 100.0f}}}, 6),
              std::vector<int32_t>(6, 9));
    EXPECT_EQ(run({.temperature = 0.0f, .logit_bias = {{.token = 11, .bias = 100.0f}}}, 6), std::vector<int32_t>(6, 11));
    EXPECT_GT(runner_->num_host_steps.load(), 0);
    EXPECT_EQ(runner_->num_device_steps.load(), 0);
    run({.temperature = 1.0f, .seed = 1}, 4);
    EXPECT_GT(runner_->num_device_steps.load(), 0) << "positive control: an unbiased request samples on the device";
}

// Pipelined: a biased request beside an unbiased one makes the steps synchronous while it runs; both
// get what they would get alone.
TEST_F(DeviceSamplingTest, LogitBiasInThePipelinedEngine) {
    auto inner = std::make_unique<HostSamplingRunner>(std::make_unique<executor::CpuRunner>(
        *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 64}));
    Engine pipelined(std::move(inner), *tokenizer_, EngineConfig{.overlap = StepOverlap::kOn});
    const auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    const auto expected = golden_["greedy"].get<std::vector<int32_t>>();
    auto plain = std::make_shared<testing_util::CollectingSink>();
    auto biased = std::make_shared<testing_util::CollectingSink>();
    std::vector<Request> both(2);
    both[0] = {.id = {1}, .prompt = prompt, .max_tokens = static_cast<int>(expected.size()), .sink = plain};
    both[0].sampling.temperature = 0;
    both[1] = {.id = {2}, .prompt = prompt, .max_tokens = 8, .sink = biased};
    both[1].sampling = {.temperature = 1.5f, .seed = 5, .logit_bias = {{.token = 13, .bias = 100.0f}}};
    ASSERT_EQ(pipelined.submit(std::move(both)), Engine::Admission::kAccepted);
    ASSERT_TRUE(plain->wait());
    ASSERT_TRUE(biased->wait());
    EXPECT_EQ(plain->tokens, expected);
    EXPECT_EQ(biased->tokens, std::vector<int32_t>(8, 13));
}

}  // namespace
}  // namespace hichat::engine
