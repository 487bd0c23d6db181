// Constrained decoding through the engine: every sampled reply of a random-weight model follows the
// schema and ends at a complete match, next to an unconstrained request in the same batch, and logprobs
// are those of the masked distribution. Two runners: the CPU runner (host logits masked by the engine,
// synchronous steps while a grammar runs) and DeferredPickRunner, which has the CUDA runner's
// submit_forward() / pick() interface (masks computed while the forward pass runs; pipelined, the
// next step is submitted before this one's tokens are back), and the CUDA runner itself (skipped without
// a device), each with a sync and a pipelined engine.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "host_sampling_runner.h"
#include "executor/runner_factory.h"
#include "grammar/grammar.h"
#include "grammar/tokenizer_info.h"

namespace hichat::engine {
namespace {

using testing_util::CollectingSink;

enum class RunnerKind { kCpu, kDeferredPick, kCuda };

class GrammarEngineTest : public testing_util::TinyModelTest,
                          public ::testing::WithParamInterface<std::tuple<RunnerKind, StepOverlap>> {
protected:
    std::shared_ptr<const grammar::TokenizerInfo> vocab() const {
        std::vector<std::string> bytes;
        std::vector<int32_t> special;
        for (int32_t id = 0; id < tokenizer_->vocab_size(); ++id) {
            bytes.push_back(tokenizer_->is_special(id) ? std::string() : tokenizer_->token_bytes(id));
            if (tokenizer_->is_special(id)) special.push_back(id);
        }
        const std::vector<int32_t> eos = tokenizer_->eos_ids();
        std::erase_if(special, [&](int32_t id) { return std::find(eos.begin(), eos.end(), id) != eos.end(); });
        auto info = grammar::TokenizerInfo::create(std::move(bytes), eos, special, checkpoint_->config().vocab_size);
        EXPECT_TRUE(info.ok()) << info.status().message();
        return std::move(info).value();
    }
};

TEST_P(GrammarEngineTest, SampledRepliesFollowTheSchema) {
    const auto [kind, overlap] = GetParam();
    std::unique_ptr<executor::ModelRunner> runner;
    testing_util::DeferredPickRunner* deferred = nullptr;
    if (kind == RunnerKind::kCuda && !executor::cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    if (kind != RunnerKind::kDeferredPick) {
        const auto device = kind == RunnerKind::kCuda ? executor::DeviceKind::kCuda : executor::DeviceKind::kCpu;
        auto cpu = executor::make_runner(*checkpoint_, {.device = device, .num_threads = 2,
                                                        .max_num_seqs = 8, .max_num_tokens_per_step = 256,
                                                        .max_context_tokens = 512, .num_kv_blocks = 128});
        ASSERT_TRUE(cpu.ok()) << cpu.status().message();
        runner = std::move(cpu).value();
    } else {
        auto d = std::make_unique<testing_util::DeferredPickRunner>(std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 128}));
        deferred = d.get();
        runner = std::move(d);
    }
    EngineConfig config;
    config.overlap = overlap;
    config.scheduler.max_num_seqs = 8;  // as serve sets both: a masked step's rows fit the runner's logits
    auto engine = std::make_unique<Engine>(std::move(runner), *tokenizer_, config);
    auto schema = grammar::compile_json_schema(
        R"({"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},)"
        R"("ok":{"type":"boolean"},"s":{"enum":["a","bc"]}},"required":["n","ok","s"],"additionalProperties":false})");
    ASSERT_TRUE(schema.ok()) << schema.status().message();
    const auto info = vocab();
    std::vector<std::shared_ptr<CollectingSink>> constrained, free;
    for (int i = 0; i < 8; ++i) {
        for (bool with_grammar : {true, false}) {
            Request r;
            r.id = {static_cast<uint64_t>(2 * i + with_grammar + 1)};
            r.prompt = {1, 2, 3, 4, 5, 6, 7, 8};
            r.sampling.temperature = 1.0f;
            r.sampling.seed = static_cast<uint64_t>(i);
            r.max_tokens = 40;
            r.stop_token_ids = tokenizer_->eos_ids();
            if (with_grammar) {
                r.grammar = *schema;
                r.grammar_vocab = info;
                r.num_logprobs = 2;
            }
            auto sink = std::make_shared<CollectingSink>();
            r.sink = sink;
            (with_grammar ? constrained : free).push_back(sink);
            ASSERT_EQ(engine->submit(std::move(r)), Engine::Admission::kAccepted);
        }
    }
    for (auto& s : free) ASSERT_TRUE(s->wait());
    for (auto& s : constrained) {
        ASSERT_TRUE(s->wait());
        EXPECT_EQ(s->finish, FinishReason::kStop) << s->text;
        const auto j = nlohmann::json::parse(s->text, nullptr, /*allow_exceptions=*/false);
        ASSERT_TRUE(j.is_object()) << s->text;
        EXPECT_TRUE(j["n"].is_number_integer() && j["n"] >= 0 && j["n"] <= 99) << s->text;
        EXPECT_TRUE(j["ok"].is_boolean()) << s->text;
        EXPECT_TRUE(j["s"] == "a" || j["s"] == "bc") << s->text;
        EXPECT_EQ(j.size(), 3u) << s->text;
        // Masked: the chosen token and the listed ones carry all the probability there is.
        for (const auto& lp : s->logprobs) EXPECT_GT(lp.chosen, -1e9f);
    }
    // Every reply has ended: the engine thread wrote the counters before those events.
    if (deferred != nullptr) {
        EXPECT_GT(deferred->num_masked_steps, 8);  // every grammar token was picked with a mask
        if (overlap == StepOverlap::kOn) {
            // Masked steps went in while the step before was still outstanding.
            EXPECT_GT(deferred->num_overlapped_masked_steps, deferred->num_masked_steps / 2);
        } else {
            EXPECT_EQ(deferred->num_overlapped_masked_steps, 0);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Runners, GrammarEngineTest,
                         ::testing::Combine(::testing::Values(RunnerKind::kCpu, RunnerKind::kDeferredPick, RunnerKind::kCuda),
                                            ::testing::Values(StepOverlap::kOff, StepOverlap::kOn)),
                         [](const auto& info) {
                             const RunnerKind k = std::get<0>(info.param);
                             return std::string(k == RunnerKind::kCpu ? "cpu_" : k == RunnerKind::kCuda ? "cuda_" : "deferred_pick_") +
                                    (std::get<1>(info.param) == StepOverlap::kOn ? "pipelined" : "sync");
                         });

}  // namespace
}  // namespace hichat::engine
