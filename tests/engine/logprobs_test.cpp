// Logprobs through the engine: every generated token carries its TokenLogprobs, computed where its id
// was picked (the host sampler, the runner's host argmax, or the CUDA kernel after sample_rows), and
// they equal the log-softmax of the same step's logits as forward() returns them. CPU always; CUDA
// where a device is present (skipped visibly otherwise); synchronous and pipelined engines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "base/check.h"
#include "common/fixtures.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"
#include "sampling/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace hichat::engine {
namespace {

using testing_util::CollectingSink;

class LogprobsTest : public ::testing::TestWithParam<std::tuple<executor::DeviceKind, StepOverlap>> {
protected:
    void SetUp() override {
        if (device() == executor::DeviceKind::kCuda && !executor::cuda_available()) {
            GTEST_SKIP() << "SKIPPED: no CUDA device";
        }
        auto ckpt = model::Checkpoint::open(testing::fixture_dir("llama3"));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        auto tok = tokenizer::Tokenizer::load(testing::fixture_dir("byte_tokenizer"));
        ASSERT_TRUE(tok.ok()) << tok.status().message();
        tokenizer_ = std::move(tok).value();
        ids_ = testing::read_golden("llama3")["ids_300"].get<std::vector<int32_t>>();
    }
    executor::DeviceKind device() const { return std::get<0>(GetParam()); }
    StepOverlap overlap() const { return std::get<1>(GetParam()); }

    std::unique_ptr<executor::ModelRunner> runner() {
        auto r = executor::make_runner(*checkpoint_, {.device = device(),
                                                      .num_threads = 2,
                                                      .gpu_memory_fraction = 0.05,
                                                      .max_num_seqs = 4,
                                                      .max_num_tokens_per_step = 256,
                                                      .max_context_tokens = 512,
                                                      .num_kv_blocks = 64});
        CHECK(r.ok()) << r.status().message();
        return std::move(r).value();
    }

    std::shared_ptr<CollectingSink> run(Engine& e, float temperature, int num_logprobs, int max_tokens,
                                        std::vector<float> penalties = {}) {
        Request r;
        r.id = {next_id_++};
        r.prompt.assign(ids_.begin(), ids_.begin() + 40);
        r.sampling.temperature = temperature;
        r.sampling.seed = 11;
        if (!penalties.empty()) r.sampling.repetition_penalty = penalties[0];
        r.max_tokens = max_tokens;
        r.num_logprobs = num_logprobs;
        auto sink = std::make_shared<CollectingSink>();
        r.sink = sink;
        EXPECT_EQ(e.submit(std::move(r)), Engine::Admission::kAccepted);
        EXPECT_TRUE(sink->wait());
        return sink;
    }

    // The reference: the logits of every position of prompt + generated from one forward() of a fresh
    // runner, then compute_logprobs at each generated token.
    void expect_matches_reference(const CollectingSink& sink, int num_logprobs, double tolerance) {
        ASSERT_EQ(sink.logprobs.size(), sink.tokens.size()) << "one entry per generated token";
        auto r = runner();
        std::vector<int32_t> all(ids_.begin(), ids_.begin() + 40);
        all.insert(all.end(), sink.tokens.begin(), sink.tokens.end());
        const std::vector<int32_t> table = executor::identity_block_table(static_cast<int>(all.size()), 16);
        executor::ForwardBatch batch;
        batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = all, .all_logits = true});
        std::vector<float> logits;
        r->forward(batch, logits);
        const auto vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
        for (size_t i = 0; i < sink.tokens.size(); ++i) {
            const std::span<const float> row(logits.data() + (39 + i) * vocab, vocab);
            const sampling::TokenLogprobs want = sampling::compute_logprobs(row, sink.tokens[i], num_logprobs);
            const sampling::TokenLogprobs& got = sink.logprobs[i];
            EXPECT_NEAR(got.chosen, want.chosen, tolerance) << "token " << i;
            ASSERT_EQ(got.num_top, want.num_top) << "token " << i;
            for (int k = 0; k < got.num_top; ++k) {
                EXPECT_NEAR(got.top_logprobs[k], want.top_logprobs[k], tolerance) << "token " << i << " rank " << k;
                if (k > 0) {
                    EXPECT_GE(got.top_logprobs[k - 1], got.top_logprobs[k]) << "sorted";
                }
            }
            // The order may differ only between entries nearer than the two computations differ.
            if (got.num_top > 0 && want.top_logprobs[0] - (want.num_top > 1 ? want.top_logprobs[1] : -1e9) > 2 * tolerance) {
                EXPECT_EQ(got.top_ids[0], want.top_ids[0]) << "token " << i;
            }
        }
    }

    Engine make_engine() { return Engine(runner(), *tokenizer_, {.overlap = overlap()}); }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    std::vector<int32_t> ids_;
    uint64_t next_id_ = 1;
};

// The CPU computes what the reference computes (fp32, same kernels up to the step's shape); CUDA runs
// the generated tokens as decode steps in bf16 where the reference prefills them.
double tolerance(executor::DeviceKind d) { return d == executor::DeviceKind::kCpu ? 1e-4 : 5e-2; }

TEST_P(LogprobsTest, GreedyTokensCarryTheirLogprobsAndTheTopList) {
    Engine e = make_engine();
    auto sink = run(e, 0.0f, 5, 12);
    ASSERT_EQ(sink->tokens.size(), 12u);
    for (size_t i = 0; i < sink->tokens.size(); ++i) {
        const auto& lp = sink->logprobs[i];
        ASSERT_EQ(lp.num_top, 5);
        EXPECT_EQ(lp.top_ids[0], sink->tokens[i]) << "greedy: the chosen token is the most likely";
        EXPECT_EQ(lp.chosen, lp.top_logprobs[0]);
        EXPECT_LE(lp.chosen, 0.0f);
    }
    expect_matches_reference(*sink, 5, tolerance(device()));
}

TEST_P(LogprobsTest, SampledTokensCarryTheRawDistributionsLogprobs) {
    Engine e = make_engine();
    auto sink = run(e, 1.5f, 20, 12);
    ASSERT_EQ(sink->tokens.size(), 12u);
    expect_matches_reference(*sink, 20, tolerance(device()));
}

TEST_P(LogprobsTest, PenaltiesDoNotChangeTheRawLogprobs) {  // host-sampled on either device
    Engine e = make_engine();
    auto sink = run(e, 0.0f, 3, 10, {1.3f});
    ASSERT_EQ(sink->tokens.size(), 10u);
    expect_matches_reference(*sink, 3, tolerance(device()));
}

TEST_P(LogprobsTest, ZeroTopEntriesStillGivesTheChosenTokens) {
    Engine e = make_engine();
    auto sink = run(e, 0.0f, 0, 6);
    ASSERT_EQ(sink->logprobs.size(), 6u);
    for (const auto& lp : sink->logprobs) EXPECT_EQ(lp.num_top, 0);
    expect_matches_reference(*sink, 0, tolerance(device()));
    auto none = run(e, 0.0f, -1, 6);
    EXPECT_TRUE(none->logprobs.empty()) << "not asked: none";
    EXPECT_EQ(none->tokens, sink->tokens);
}

// The runner itself: submit() with rows that ask for logprobs, then forward() of the same batch (which
// rewrites the same KV with the same values): the logprobs that came back with the ids are the log-softmax
// of that step's logits, to fp32 rounding. On CUDA the rows sample (the kernel runs after sample_rows) and
// the three steps cover the decode graph's first, capturing and replayed runs.
TEST_P(LogprobsTest, RunnerLogprobsAreTheStepsLogSoftmax) {
    if (overlap() == StepOverlap::kOn) GTEST_SKIP() << "runner-level: one run per device";
    auto r = runner();
    std::vector<int32_t> prompt(ids_.begin(), ids_.begin() + 40);
    const std::vector<int32_t> table = {0, 1, 2, 3};
    executor::ForwardBatch prefill;
    prefill.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = prompt});
    std::vector<float> logits;
    r->forward(prefill, logits);
    const bool cuda = device() == executor::DeviceKind::kCuda;
    int32_t next = prompt.back();
    const auto vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    for (int step = 0; step < 3; ++step) {
        const std::vector<int32_t> token = {next};
        executor::ForwardBatch batch;
        batch.seqs.push_back({.block_table = table, .pos0 = 40 + step, .tokens = token});
        const std::vector<executor::RowSampling> rows = {
            {.temperature = cuda ? 1.0f : 0.0f, .u = 0.37f, .num_logprobs = 20}};
        std::vector<int32_t> ids;
        r->submit(batch, rows);
        r->collect(ids);
        ASSERT_EQ(ids.size(), 1u);
        ASSERT_EQ(r->step_logprobs().size(), 1u);
        const sampling::TokenLogprobs got = r->step_logprobs()[0];
        r->forward(batch, logits);
        const sampling::TokenLogprobs want = sampling::compute_logprobs({logits.data(), vocab}, ids[0], 20);
        EXPECT_NEAR(got.chosen, want.chosen, 1e-4) << "step " << step;
        ASSERT_EQ(got.num_top, 20);
        for (int k = 0; k < 20; ++k) {
            EXPECT_NEAR(got.top_logprobs[k], want.top_logprobs[k], 1e-4) << "step " << step << " rank " << k;
            const bool apart = (k == 0 || want.top_logprobs[k - 1] - want.top_logprobs[k] > 1e-4) &&
                               (k + 1 == 20 || want.top_logprobs[k] - want.top_logprobs[k + 1] > 1e-4);
            if (apart) {
                EXPECT_EQ(got.top_ids[k], want.top_ids[k]) << "step " << step << " rank " << k;
            }
        }
        next = ids[0];
    }
}

// Prompt logprobs (completions' echo): entry p - 1 is prompt token p's logprobs under the logits of
// position p - 1, for a prompt prefilled in three chunks, with the same prompt already in the prefix
// cache (a prompt-logprobs request computes it all again); they come with the first event, and the
// generated tokens are those of the same request without them.
TEST_P(LogprobsTest, PromptLogprobsAreEachPromptTokensLogSoftmax) {
    scheduler::SchedulerConfig sc;
    sc.max_num_seqs = 4;
    sc.max_num_tokens_per_step = 64;
    sc.prefill_chunk_tokens = 16;
    Engine e(runner(), *tokenizer_, {.scheduler = sc, .overlap = overlap()});
    auto plain = run(e, 0.0f, 3, 6);
    ASSERT_EQ(plain->tokens.size(), 6u);

    auto sink = std::make_shared<CollectingSink>();
    Request r;
    r.id = {next_id_++};
    r.prompt.assign(ids_.begin(), ids_.begin() + 40);
    r.sampling.temperature = 0.0f;
    r.max_tokens = 6;
    r.num_logprobs = 3;
    r.num_prompt_logprobs = 5;
    r.sink = sink;
    ASSERT_EQ(e.submit(std::move(r)), Engine::Admission::kAccepted);
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->num_cached, 0) << "no prefix-cache hit for prompt logprobs";
    EXPECT_EQ(sink->prompt_logprobs_event, 0) << "with the first event";
    ASSERT_EQ(sink->prompt_logprobs.size(), 39u);
    if (device() == executor::DeviceKind::kCpu) {
        EXPECT_EQ(sink->tokens, plain->tokens);
    }
    expect_matches_reference(*sink, 3, tolerance(device()));

    auto ref = runner();
    const std::vector<int32_t> prompt(ids_.begin(), ids_.begin() + 40);
    const std::vector<int32_t> table = executor::identity_block_table(40, 16);
    executor::ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = prompt, .all_logits = true});
    std::vector<float> logits;
    ref->forward(batch, logits);
    const auto vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    // CUDA prefills the chunks of the engine and the one pass of the reference alike, in bf16.
    const double tol = device() == executor::DeviceKind::kCpu ? 1e-4 : 2e-2;
    for (size_t p = 1; p < 40; ++p) {
        const sampling::TokenLogprobs want =
            sampling::compute_logprobs({logits.data() + (p - 1) * vocab, vocab}, prompt[p], 5);
        const sampling::TokenLogprobs& got = sink->prompt_logprobs[p - 1];
        EXPECT_NEAR(got.chosen, want.chosen, tol) << "prompt token " << p;
        ASSERT_EQ(got.num_top, 5);
        for (int k = 0; k < 5; ++k) EXPECT_NEAR(got.top_logprobs[k], want.top_logprobs[k], tol) << p << " rank " << k;
    }
}

// max_tokens 0: the prompt is computed, its logprobs come back, nothing is generated.
TEST_P(LogprobsTest, NoTokensAskedGivesThePromptLogprobsOnly) {
    Engine e = make_engine();
    auto sink = std::make_shared<CollectingSink>();
    Request r;
    r.id = {next_id_++};
    r.prompt.assign(ids_.begin(), ids_.begin() + 20);
    r.max_tokens = 0;
    r.num_prompt_logprobs = 0;
    r.sink = sink;
    ASSERT_EQ(e.submit(std::move(r)), Engine::Admission::kAccepted);
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->finish, FinishReason::kLength);
    EXPECT_TRUE(sink->tokens.empty());
    ASSERT_EQ(sink->prompt_logprobs.size(), 19u);
    for (const auto& lp : sink->prompt_logprobs) {
        EXPECT_EQ(lp.num_top, 0);
        EXPECT_LE(lp.chosen, 0.0f);
    }
    auto after = run(e, 0.0f, -1, 3);  // the engine goes on
    EXPECT_EQ(after->tokens.size(), 3u);
}

std::string param_name(const ::testing::TestParamInfo<LogprobsTest::ParamType>& info) {
    return std::string(std::get<0>(info.param) == executor::DeviceKind::kCuda ? "cuda" : "cpu") +
           (std::get<1>(info.param) == StepOverlap::kOn ? "_pipelined" : "");
}

INSTANTIATE_TEST_SUITE_P(Devices, LogprobsTest,
                         ::testing::Combine(::testing::Values(executor::DeviceKind::kCpu, executor::DeviceKind::kCuda),
                                            ::testing::Values(StepOverlap::kOff, StepOverlap::kOn)),
                         param_name);

}  // namespace
}  // namespace hichat::engine
