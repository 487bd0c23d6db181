// Load-aware admission: once the scheduler's cost model has seen enough steps, the engine predicts how
// long the waiting requests take to start and refuses new ones (kOverloaded) while that is above
// EngineConfig::max_queue_wait_ms; Retry-After follows the prediction. Driven by the engine's own
// published state (polled with a deadline), never by the clock.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"

namespace hichat::engine {
namespace {

using testing_util::CollectingSink;

class AdmissionTest : public testing_util::TinyModelTest {
protected:
    std::unique_ptr<Engine> make_engine(double max_queue_wait_ms) {
        auto runner = std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 512});
        EngineConfig cfg{.scheduler = {.max_num_seqs = 1, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 64},
                         .max_queue_wait_ms = max_queue_wait_ms};
        return std::make_unique<Engine>(std::move(runner), *tokenizer_, cfg);
    }
    Request request(int prompt_tokens, int max_tokens, std::shared_ptr<TokenSink> sink) {
        Request r;
        r.id = {next_id_++};
        for (int i = 0; i < prompt_tokens; ++i) r.prompt.push_back(3 + (i * 7) % 250);
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        r.sink = std::move(sink);
        return r;
    }
    // Prompts of two chunks, one at a time: prefill and decode steps for the cost model.
    void warm_up(Engine& engine) {
        for (int i = 0; i < 5; ++i) {
            auto sink = std::make_shared<CollectingSink>();
            ASSERT_EQ(engine.submit(request(100, 6, sink)), Engine::Admission::kAccepted);
            ASSERT_TRUE(sink->wait());
        }
    }
    // Polls the published stats until pred holds (false after 60 s).
    template <typename Pred>
    bool wait_for_stats(const Engine& engine, Pred pred) {
        for (int i = 0; i < 6000; ++i) {
            if (pred(engine.stats())) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }
    uint64_t next_id_ = 1;
};

TEST_F(AdmissionTest, RefusesWhileThePredictedWaitIsOverTheLimitAndAcceptsOnceItDrains) {
    auto engine = make_engine(/*max_queue_wait_ms=*/0.001);
    warm_up(*engine);
    EXPECT_EQ(engine->stats().predicted_wait_ms, 0.0) << "nothing waits";
    // One runs (max_num_seqs 1), eleven wait with 300-token prompts: thousands of steps in which
    // requests wait, for the poll below to see.
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (int i = 0; i < 12; ++i) {
        sinks.push_back(std::make_shared<CollectingSink>());
        ASSERT_EQ(engine->submit(request(300, 400, sinks.back())), Engine::Admission::kAccepted) << i;
    }
    ASSERT_TRUE(wait_for_stats(*engine, [](const EngineStats& s) { return s.predicted_wait_ms > 0; }));
    const EngineStats loaded = engine->stats();
    EXPECT_GT(loaded.waiting_prompt_tokens, 0);
    auto refused = std::make_shared<CollectingSink>();
    EXPECT_EQ(engine->submit(request(10, 1, refused)), Engine::Admission::kOverloaded);
    EXPECT_GE(engine->retry_after_s(), 1);
    EXPECT_LE(engine->retry_after_s(), 3600);
    for (auto& s : sinks) ASSERT_TRUE(s->wait());
    ASSERT_TRUE(wait_for_stats(*engine, [](const EngineStats& s) { return s.num_waiting == 0 && s.predicted_wait_ms == 0; }));
    auto later = std::make_shared<CollectingSink>();
    EXPECT_EQ(engine->submit(request(10, 1, later)), Engine::Admission::kAccepted);
    EXPECT_TRUE(later->wait());
}

TEST_F(AdmissionTest, NoLimitMeansTheQueueBoundAlone) {
    auto engine = make_engine(/*max_queue_wait_ms=*/0);
    warm_up(*engine);
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    for (int i = 0; i < 12; ++i) {   // as above: long enough a wait for the poll to see
        sinks.push_back(std::make_shared<CollectingSink>());
        ASSERT_EQ(engine->submit(request(300, 400, sinks.back())), Engine::Admission::kAccepted) << i;
    }
    ASSERT_TRUE(wait_for_stats(*engine, [](const EngineStats& s) { return s.predicted_wait_ms > 0; }));
    auto more = std::make_shared<CollectingSink>();
    EXPECT_EQ(engine->submit(request(10, 1, more)), Engine::Admission::kAccepted) << "the prediction alone refuses nothing";
    for (auto& s : sinks) ASSERT_TRUE(s->wait());
    EXPECT_TRUE(more->wait());
}

}  // namespace
}  // namespace hichat::engine
