// The engine loop on a tiny fixture model: continuous batching gives each request the tokens it
// would get alone; stop strings, limits, cancellation, deadlines, preemption and queue bounds.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"

namespace hichat::engine {
namespace {

namespace fs = std::filesystem;

using testing_util::CollectingSink;
using testing_util::kv_blocks_used_when_settled;

class EngineTest : public testing_util::TinyModelTest {
protected:
    std::unique_ptr<Engine> make_engine(int num_kv_blocks, scheduler::SchedulerConfig sched = {}, int max_waiting = 1024) {
        auto runner = std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = num_kv_blocks});
        EngineConfig cfg{.scheduler = sched, .max_waiting = max_waiting};
        return std::make_unique<Engine>(std::move(runner), *tokenizer_, cfg);
    }

    Request greedy_request(std::vector<int32_t> prompt, int max_tokens, std::shared_ptr<TokenSink> sink) {
        Request r;
        r.id = {next_id_++};
        r.prompt = std::move(prompt);
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        r.sink = std::move(sink);
        return r;
    }

    // Each prompt run on its own in a fresh engine: the reference for batched runs.
    std::vector<std::vector<int32_t>> run_each_alone(const std::vector<std::vector<int32_t>>& ps, int max_tokens) {
        auto engine = make_engine(64);
        std::vector<std::vector<int32_t>> out;
        for (const auto& p : ps) {
            auto sink = std::make_shared<CollectingSink>();
            engine->submit(greedy_request(p, max_tokens, sink));
            EXPECT_TRUE(sink->wait());
            out.push_back(sink->tokens);
        }
        return out;
    }

    uint64_t next_id_ = 1;
};

TEST_F(EngineTest, GreedyEqualsTransformers) {
    auto engine = make_engine(64);
    auto sink = std::make_shared<CollectingSink>();
    auto expected = golden_["greedy"].get<std::vector<int32_t>>();
    ASSERT_EQ(engine->submit(greedy_request(golden_["prompt"].get<std::vector<int32_t>>(),
                                            static_cast<int>(expected.size()), sink)),
              Engine::Admission::kAccepted);
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->tokens, expected);
    EXPECT_EQ(sink->finish, FinishReason::kLength);
    EXPECT_EQ(sink->num_generated, static_cast<int>(expected.size()));
    EXPECT_EQ(sink->text, tokenizer_->decode(expected, true));
}

// Prompts of different lengths cut from the fixture ids.
std::vector<std::vector<int32_t>> prompts(const nlohmann::json& golden, int n) {
    auto ids = golden["ids_300"].get<std::vector<int32_t>>();
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) {
        size_t begin = static_cast<size_t>(i * 7 % 200), len = static_cast<size_t>(5 + (i * 13) % 60);
        out.emplace_back(ids.begin() + static_cast<ptrdiff_t>(begin), ids.begin() + static_cast<ptrdiff_t>(begin + len));
    }
    return out;
}

TEST_F(EngineTest, ConcurrentRequestsEachEqualTheirRunAlone) {
    const int n = 24, max_tokens = 20;
    auto ps = prompts(golden_, n);
    const auto alone = run_each_alone(ps, max_tokens);
    // Small token budget and chunks: requests join and leave a running batch every step.
    auto engine = make_engine(512, {.max_num_seqs = 16, .max_num_tokens_per_step = 48, .prefill_chunk_tokens = 16});
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (const auto& p : ps) {
        sinks.push_back(std::make_shared<CollectingSink>());
        ASSERT_EQ(engine->submit(greedy_request(p, max_tokens, sinks.back())), Engine::Admission::kAccepted);
    }
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(sinks[static_cast<size_t>(i)]->wait());
        EXPECT_EQ(sinks[static_cast<size_t>(i)]->tokens, alone[static_cast<size_t>(i)]) << "request " << i;
        EXPECT_EQ(sinks[static_cast<size_t>(i)]->num_generated, max_tokens);
    }
    EXPECT_EQ(kv_blocks_used_when_settled(*engine), 0);
}

TEST_F(EngineTest, PreemptionUnderATinyKvPoolKeepsResultsExact) {
    const int n = 6, max_tokens = 40;
    auto ps = prompts(golden_, n);
    const auto alone = run_each_alone(ps, max_tokens);
    auto engine = make_engine(12);  // 192 token slots for 6 sequences of up to ~105 tokens
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (const auto& p : ps) {
        sinks.push_back(std::make_shared<CollectingSink>());
        engine->submit(greedy_request(p, max_tokens, sinks.back()));
    }
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(sinks[static_cast<size_t>(i)]->wait());
        EXPECT_EQ(sinks[static_cast<size_t>(i)]->tokens, alone[static_cast<size_t>(i)]) << "request " << i;
    }
    EXPECT_GT(engine->stats().num_preemptions, 0);
    EXPECT_EQ(kv_blocks_used_when_settled(*engine), 0);
}

TEST_F(EngineTest, StopStringEndsOutputBeforeIt) {
    auto engine = make_engine(64);
    auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    auto full = std::make_shared<CollectingSink>();
    engine->submit(greedy_request(prompt, 40, full));
    ASSERT_TRUE(full->wait());
    ASSERT_GT(full->text.size(), 12u);
    const std::string stop = full->text.substr(8, 3);
    const std::string expected = full->text.substr(0, full->text.find(stop));
    auto sink = std::make_shared<CollectingSink>();
    Request r = greedy_request(prompt, 40, sink);
    r.stop = {stop};
    engine->submit(std::move(r));
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->finish, FinishReason::kStop);
    EXPECT_EQ(sink->text, expected);
}

TEST_F(EngineTest, StopTokenEndsWithoutBeingOutput) {
    auto engine = make_engine(64);
    auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    auto expected = golden_["greedy"].get<std::vector<int32_t>>();
    auto sink = std::make_shared<CollectingSink>();
    Request r = greedy_request(prompt, 40, sink);
    r.stop_token_ids = {expected[5]};
    engine->submit(std::move(r));
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->finish, FinishReason::kStop);
    const auto first = std::find(expected.begin(), expected.end(), expected[5]);
    EXPECT_EQ(sink->tokens, std::vector<int32_t>(expected.begin(), first));
}

TEST_F(EngineTest, CancelFreesKvAndOthersContinue) {
    auto engine = make_engine(64);
    auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    auto victim = std::make_shared<CollectingSink>();
    auto other = std::make_shared<CollectingSink>();
    Request r = greedy_request(prompt, 1000, victim);
    const RequestId victim_id = r.id;
    engine->submit(std::move(r));
    engine->submit(greedy_request(prompt, 30, other));
    engine->cancel(victim_id);
    ASSERT_TRUE(victim->wait());
    EXPECT_EQ(victim->finish, FinishReason::kCancelled);
    ASSERT_TRUE(other->wait());
    EXPECT_EQ(other->finish, FinishReason::kLength);
    EXPECT_EQ(other->num_generated, 30);
    EXPECT_EQ(kv_blocks_used_when_settled(*engine), 0);
}

// A sink that takes 2 ms per event on the engine's thread: without it, the tiny model can fill its
// context (finish "length") within the 50 ms deadline on a fast, idle machine.
class SlowSink : public CollectingSink {
public:
    void on_event(TokenEvent ev) override {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        CollectingSink::on_event(std::move(ev));
    }
};

TEST_F(EngineTest, DeadlineEndsARequest) {
    auto engine = make_engine(64);
    auto sink = std::make_shared<SlowSink>();
    Request r = greedy_request(golden_["prompt"].get<std::vector<int32_t>>(), 1500, sink);
    r.deadline = Clock::now() + std::chrono::milliseconds(50);
    engine->submit(std::move(r));
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->finish, FinishReason::kDeadline);
    EXPECT_LT(sink->num_generated, 1500);
}

TEST_F(EngineTest, FullQueueRefuses) {
    auto engine = make_engine(64, {}, /*max_waiting=*/2);
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    int refused = 0;
    for (int i = 0; i < 50; ++i) {
        sinks.push_back(std::make_shared<CollectingSink>());
        refused += engine->submit(greedy_request({5, 6, 7}, 200, sinks.back())) == Engine::Admission::kQueueFull;
    }
    EXPECT_GT(refused, 0);
}

TEST_F(EngineTest, OutputDenyListStopsWithContentFilter) {
    auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    std::string full_text;
    {
        auto engine = make_engine(64);
        auto full = std::make_shared<CollectingSink>();
        engine->submit(greedy_request(prompt, 40, full));
        ASSERT_TRUE(full->wait());
        full_text = full->text;
    }
    // Pick a run of ASCII letters from the output as the denied phrase.
    size_t at = full_text.find_first_of("abcdefghijklmnopqrstuvwxyz", 6);
    ASSERT_NE(at, std::string::npos) << full_text;
    std::string phrase = full_text.substr(at, 1);
    auto runner = std::make_unique<executor::CpuRunner>(
        *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 64});
    EngineConfig cfg;
    cfg.output_deny_list = {phrase};
    Engine engine(std::move(runner), *tokenizer_, cfg);
    auto sink = std::make_shared<CollectingSink>();
    engine.submit(greedy_request(prompt, 40, sink));
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->finish, FinishReason::kContentFilter);
    std::string lowered = full_text;
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(sink->text, full_text.substr(0, lowered.find(phrase)));
}

// logit_bias through the engine (synchronous and pipelined): -100 on every token of the greedy answer
// bans them all (the greedy answer changes and none of them appears); +100 on one token makes every
// sampled token that one, even at temperature 2.
TEST_F(EngineTest, LogitBiasBansAndForcesTokens) {
    const auto prompt = golden_["ids_300"].get<std::vector<int32_t>>();
    const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 40);
    for (StepOverlap overlap : {StepOverlap::kOff, StepOverlap::kOn}) {
        auto runner = std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 64});
        Engine engine(std::move(runner), *tokenizer_, EngineConfig{.overlap = overlap});
        auto run = [&](Request r) {
            auto sink = std::make_shared<CollectingSink>();
            r.sink = sink;
            EXPECT_EQ(engine.submit(std::move(r)), Engine::Admission::kAccepted);
            EXPECT_TRUE(sink->wait());
            return sink->tokens;
        };
        const std::vector<int32_t> plain = run(greedy_request(head, 12, nullptr));
        ASSERT_EQ(plain.size(), 12u);
        Request banned = greedy_request(head, 12, nullptr);
        for (int32_t t : plain) {
            if (std::none_of(banned.sampling.logit_bias.begin(), banned.sampling.logit_bias.end(),
                             [&](const sampling::TokenBias& b) { return b.token == t; })) {
                banned.sampling.logit_bias.push_back({.token = t, .bias = -100.0f});
            }
        }
        const std::vector<int32_t> without = run(std::move(banned));
        ASSERT_EQ(without.size(), 12u);
        for (int32_t t : without) {
            EXPECT_TRUE(std::find(plain.begin(), plain.end(), t) == plain.end()) << "banned token " << t;
        }
        Request forced = greedy_request(head, 12, nullptr);
        forced.sampling.temperature = 2.0f;
        forced.sampling.seed = 3;
        const int32_t token = plain[0] == 7 ? 8 : 7;
        forced.sampling.logit_bias = {{.token = token, .bias = 100.0f}};
        EXPECT_EQ(run(std::move(forced)), std::vector<int32_t>(12, token));
    }
}

}  // namespace
}  // namespace hichat::engine
