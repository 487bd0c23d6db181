// The pipelined engine (EngineConfig::overlap = kOn) against the synchronous one (kOff), on the tiny
// fixture model: every request gets the same tokens, text, finish reason and counts. A wrapper runner
// counts submits without collects (never more than two) and the placeholders it was handed.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"
#include "host_sampling_runner.h"

namespace hichat::engine {
namespace {

using testing_util::CollectingSink;
using testing_util::kv_blocks_used_when_settled;
using testing_util::HostSamplingRunner;

// What the wrapper saw; shared with the test, since the engine owns the runner.
struct PipelineCounts {
    std::atomic<int> num_submits{0}, num_outstanding{0}, max_outstanding{0}, num_placeholders{0};
    std::atomic<int> num_logits_steps{0};  // forward() called by the engine: logits for host sampling
};

// Forwards to an inner runner; submit()/collect() are the default ModelRunner ones, counted.
class CountingRunner final : public executor::ModelRunner {
public:
    CountingRunner(std::unique_ptr<executor::ModelRunner> inner, std::shared_ptr<PipelineCounts> counts, bool async)
        : inner_(std::move(inner)), counts_(std::move(counts)), async_(async) {}
    const model::ModelConfig& model_config() const override { return inner_->model_config(); }
    int num_kv_blocks() const override { return inner_->num_kv_blocks(); }
    int kv_block_size_tokens() const override { return inner_->kv_block_size_tokens(); }
    void forward(const executor::ForwardBatch& batch, std::vector<float>& logits) override {
        ++counts_->num_logits_steps;
        inner_->forward(batch, logits);
    }
    void forward_argmax(const executor::ForwardBatch& batch, std::vector<int32_t>& ids) override {
        inner_->forward_argmax(batch, ids);
    }
    bool samples_on_device() const override { return inner_->samples_on_device(); }
    void forward_sample(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows,
                        std::vector<int32_t>& ids) override {
        inner_->forward_sample(batch, rows, ids);
    }
    bool runs_async() const override { return async_; }
    void submit(const executor::ForwardBatch& batch, std::span<const executor::RowSampling> rows) override {
        const int outstanding = ++counts_->num_outstanding;
        EXPECT_LE(outstanding, 2);
        counts_->max_outstanding = std::max(counts_->max_outstanding.load(), outstanding);
        ++counts_->num_submits;
        for (const auto& s : batch.seqs) {
            counts_->num_placeholders += static_cast<int>(std::count_if(s.tokens.begin(), s.tokens.end(),
                                                                        [](int32_t t) { return t < 0; }));
        }
        ModelRunner::submit(batch, rows);
    }
    void collect(std::vector<int32_t>& ids) override {
        EXPECT_GT(counts_->num_outstanding.load(), 0);
        --counts_->num_outstanding;
        ModelRunner::collect(ids);
    }

private:
    std::unique_ptr<executor::ModelRunner> inner_;
    std::shared_ptr<PipelineCounts> counts_;
    bool async_;
};

struct Outcome {
    std::vector<int32_t> tokens;
    std::string text;
    FinishReason finish = FinishReason::kNone;
    int num_generated = 0;
    bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
    os << finish_reason_name(o.finish) << " n=" << o.num_generated << " text=\"" << o.text << "\" ids=";
    for (int32_t t : o.tokens) os << t << ",";
    return os;
}

// Cancels its request (from the engine thread, as a client could at any time) after k events.
class CancellingSink : public CollectingSink {
public:
    CancellingSink(int cancel_after_events, RequestId id) : cancel_after_(cancel_after_events), id_(id) {}
    void on_event(TokenEvent ev) override {
        CollectingSink::on_event(std::move(ev));
        if (++seen_ == cancel_after_ && engine != nullptr) engine->cancel(id_);
    }
    Engine* engine = nullptr;

private:
    int cancel_after_, seen_ = 0;
    RequestId id_;
};

class EngineOverlapTest : public testing_util::TinyModelTest {
protected:
    struct Setup {
        StepOverlap overlap = StepOverlap::kOn;
        int num_kv_blocks = 128;
        scheduler::SchedulerConfig sched = {};
        bool host_sampling_runner = false;  // HostSamplingRunner (samples "on the device") or CpuRunner
        bool async = false;                 // what the wrapper's runs_async() says
        int max_model_len = 0;
        int cancel_request = -1;            // index of a request cancelled after cancel_after_events
        int cancel_after_events = 0;
    };

    std::unique_ptr<Engine> make_engine(const Setup& setup) {
        auto cpu = std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = setup.num_kv_blocks});
        std::unique_ptr<executor::ModelRunner> inner;
        if (setup.host_sampling_runner) {
            auto host = std::make_unique<HostSamplingRunner>(std::move(cpu));
            host_runner_ = host.get();
            inner = std::move(host);
        } else {
            inner = std::move(cpu);
        }
        counts_ = std::make_shared<PipelineCounts>();
        auto runner = std::make_unique<CountingRunner>(std::move(inner), counts_, setup.async);
        EngineConfig cfg{.scheduler = setup.sched, .max_model_len = setup.max_model_len, .overlap = setup.overlap};
        return std::make_unique<Engine>(std::move(runner), *tokenizer_, cfg);
    }

    // Submits every request at once and waits for all of them; the engine is kept in engine_.
    std::vector<Outcome> run(const Setup& setup, std::vector<Request> requests) {
        engine_ = make_engine(setup);
        std::vector<std::shared_ptr<CollectingSink>> sinks;
        for (size_t i = 0; i < requests.size(); ++i) {
            Request& r = requests[i];
            r.id = {i + 1};
            if (static_cast<int>(i) == setup.cancel_request) {
                auto sink = std::make_shared<CancellingSink>(setup.cancel_after_events, r.id);
                sink->engine = engine_.get();
                sinks.push_back(sink);
            } else {
                sinks.push_back(std::make_shared<CollectingSink>());
            }
            r.sink = sinks.back();
        }
        // All at once: the engine admits them in one drain, so what a step holds (and whether a tiny
        // pool preempts) does not depend on when the engine thread wakes.
        EXPECT_EQ(engine_->submit(std::move(requests)), Engine::Admission::kAccepted);
        std::vector<Outcome> out;
        for (auto& sink : sinks) {
            EXPECT_TRUE(sink->wait());
            out.push_back({sink->tokens, sink->text, sink->finish, sink->num_generated});
        }
        return out;
    }

    // The same requests through the synchronous and the pipelined engine; returns the synchronous run.
    std::vector<Outcome> expect_same_as_synchronous(Setup setup, const std::vector<Request>& requests) {
        Setup sync_setup = setup;
        sync_setup.overlap = StepOverlap::kOff;
        const std::vector<Outcome> expected = run(sync_setup, requests);
        EXPECT_EQ(counts_->num_submits.load(), 0);
        const std::vector<Outcome> got = run(setup, requests);
        for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "request " << i;
        EXPECT_GT(counts_->num_submits.load(), 0);
        EXPECT_EQ(kv_blocks_used_when_settled(*engine_), 0);
        return expected;
    }

    Request request(std::vector<int32_t> prompt, int max_tokens, sampling::SamplingParams sampling = {.temperature = 0}) {
        Request r;
        r.prompt = std::move(prompt);
        r.sampling = sampling;
        r.max_tokens = max_tokens;
        return r;
    }

    // Prompts of different lengths cut from the fixture ids.
    std::vector<std::vector<int32_t>> prompts(int n) const {
        auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
        std::vector<std::vector<int32_t>> out;
        for (int i = 0; i < n; ++i) {
            auto begin = static_cast<ptrdiff_t>(i * 11 % 200), len = static_cast<ptrdiff_t>(4 + (i * 17) % 50);
            out.emplace_back(ids.begin() + begin, ids.begin() + begin + len);
        }
        return out;
    }

    std::unique_ptr<Engine> engine_;
    std::shared_ptr<PipelineCounts> counts_;
    HostSamplingRunner* host_runner_ = nullptr;
};

TEST_F(EngineOverlapTest, GreedyConcurrentRequestsEqualSynchronous) {
    std::vector<Request> requests;
    const auto ps = prompts(10);
    for (size_t i = 0; i < ps.size(); ++i) requests.push_back(request(ps[i], 3 + static_cast<int>(i) * 3));
    // Small budgets and chunks: requests join and leave the batch, prefills span several steps.
    const auto expected = expect_same_as_synchronous(
        {.sched = {.max_num_seqs = 6, .max_num_tokens_per_step = 24, .prefill_chunk_tokens = 8}}, requests);
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(expected[i].num_generated, requests[i].max_tokens);
    // Steps overlapped (a second submit before the first collect), through the runner's placeholders.
    EXPECT_EQ(counts_->max_outstanding.load(), 2);
    EXPECT_GT(counts_->num_placeholders.load(), 0);
    EXPECT_EQ(counts_->num_outstanding.load(), 0);
}

TEST_F(EngineOverlapTest, GreedyMatchesTransformersGolden) {
    const auto expected = golden_["greedy"].get<std::vector<int32_t>>();
    const auto got = run({}, {request(golden_["prompt"].get<std::vector<int32_t>>(), static_cast<int>(expected.size()))});
    EXPECT_EQ(got[0].tokens, expected);
    EXPECT_EQ(got[0].text, tokenizer_->decode(expected, true));
    EXPECT_EQ(got[0].finish, FinishReason::kLength);
}

TEST_F(EngineOverlapTest, MaxTokensOneAndTwo) {
    const auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    const auto greedy = golden_["greedy"].get<std::vector<int32_t>>();
    const auto expected = expect_same_as_synchronous(
        {}, {request(prompt, 1), request(prompt, 2), request(prompts(3)[2], 1), request(prompts(3)[1], 2)});
    EXPECT_EQ(expected[0].tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + 1));
    EXPECT_EQ(expected[1].tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + 2));
    EXPECT_EQ(expected[2].num_generated, 1);
    EXPECT_EQ(expected[3].num_generated, 2);
    for (const Outcome& o : expected) EXPECT_EQ(o.finish, FinishReason::kLength);
}

// Sampling on the "device" with seeded draws taken at submit: the same draws in the same order per
// sequence, so the same tokens.
TEST_F(EngineOverlapTest, SeededDeviceSamplingEqualsSynchronous) {
    const auto ps = prompts(6);
    std::vector<Request> requests;
    requests.push_back(request(ps[0], 12, {.temperature = 1.3f, .top_p = 0.9f, .seed = 7}));
    requests.push_back(request(ps[1], 9, {.temperature = 0.8f, .top_k = 20, .seed = 8}));
    requests.push_back(request(ps[2], 15, {.temperature = 1.0f, .min_p = 0.05f, .seed = 9}));
    requests.push_back(request(ps[3], 10, {.temperature = 0}));
    requests.push_back(request(ps[4], 1, {.temperature = 2.0f, .seed = 10}));
    requests.push_back(request(ps[5], 14, {.temperature = 1.7f, .top_k = 50, .top_p = 0.95f, .seed = 11}));
    expect_same_as_synchronous({.sched = {.max_num_seqs = 4, .max_num_tokens_per_step = 16, .prefill_chunk_tokens = 8},
                                .host_sampling_runner = true},
                               requests);
    EXPECT_EQ(counts_->num_logits_steps.load(), 0);
    EXPECT_GT(host_runner_->num_device_steps.load(), 0);
    EXPECT_EQ(counts_->max_outstanding.load(), 2);
}

// Stop strings and stop ids end a sequence while its next step is already in flight: that row is
// ignored, and what was emitted matches the synchronous engine and the full output cut at the stop.
TEST_F(EngineOverlapTest, StopStringsAndStopIdsEqualSynchronous) {
    const auto ps = prompts(6);
    std::vector<Request> full_requests;
    for (const auto& p : ps) full_requests.push_back(request(p, 30));
    const std::vector<Outcome> full = run({.overlap = StepOverlap::kOff}, full_requests);
    std::vector<Request> requests;
    std::vector<Outcome> cut;  // the expected outcome from the full output
    for (size_t i = 0; i < ps.size(); ++i) {
        Request r = request(ps[i], 30);
        Outcome want;
        want.finish = FinishReason::kStop;
        if (i % 2 == 0) {
            ASSERT_GT(full[i].text.size(), 10u) << full[i];
            const std::string stop = full[i].text.substr(4 + i, 2);
            r.stop = {stop};
            want.text = full[i].text.substr(0, full[i].text.find(stop));
        } else {
            const int32_t stop_id = full[i].tokens[3 + i];
            r.stop_token_ids = {stop_id};
            const auto at = std::find(full[i].tokens.begin(), full[i].tokens.end(), stop_id);
            want.tokens.assign(full[i].tokens.begin(), at);
            want.num_generated = static_cast<int>(want.tokens.size());
        }
        requests.push_back(std::move(r));
        cut.push_back(want);
    }
    const auto expected = expect_same_as_synchronous({}, requests);
    for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(expected[i].finish, FinishReason::kStop) << "request " << i;
        if (i % 2 == 0) {
            EXPECT_EQ(expected[i].text, cut[i].text) << "request " << i;
        } else {
            EXPECT_EQ(expected[i].tokens, cut[i].tokens) << "request " << i;
            EXPECT_EQ(expected[i].num_generated, cut[i].num_generated) << "request " << i;
        }
    }
}

// The context limit (max_model_len) ends a sequence whose token in flight fills it; it sits out the
// next plan. Prompts at or past the limit end at once.
TEST_F(EngineOverlapTest, ContextLimitEqualsSynchronous) {
    const auto ps = prompts(8);
    std::vector<Request> requests;
    for (const auto& p : ps) requests.push_back(request(p, 200));
    const int max_model_len = 30;
    const auto expected = expect_same_as_synchronous({.max_model_len = max_model_len}, requests);
    for (size_t i = 0; i < ps.size(); ++i) {
        const int prompt_len = static_cast<int>(ps[i].size());
        EXPECT_EQ(expected[i].finish, FinishReason::kLength) << "request " << i;
        EXPECT_EQ(expected[i].num_generated, prompt_len >= max_model_len ? 0 : max_model_len - prompt_len)
            << "request " << i;
    }
}

// A request cancelled after its 5th event: under both engines the cancel lands before its next token
// is processed (pipelined, that token's step is in flight and its row ignored). Others run to the end.
TEST_F(EngineOverlapTest, CancelMidGenerationEqualsSynchronous) {
    const auto ps = prompts(4);
    std::vector<Request> requests;
    for (const auto& p : ps) requests.push_back(request(p, 25));
    const auto expected = expect_same_as_synchronous({.cancel_request = 1, .cancel_after_events = 5}, requests);
    EXPECT_EQ(expected[1].finish, FinishReason::kCancelled);
    EXPECT_EQ(expected[1].tokens.size(), 5u);
    for (size_t i : {0u, 2u, 3u}) EXPECT_EQ(expected[i].num_generated, 25) << "request " << i;
}

TEST_F(EngineOverlapTest, PreemptionUnderATinyKvPoolEqualsSynchronous) {
    const auto ps = prompts(6);
    std::vector<Request> requests;
    for (const auto& p : ps) requests.push_back(request(p, 40));
    // 12 blocks of 16: 192 token slots for 6 sequences of up to ~90 tokens.
    expect_same_as_synchronous({.num_kv_blocks = 12}, requests);
    EXPECT_GT(engine_->stats().num_preemptions, 0);
    EXPECT_EQ(counts_->max_outstanding.load(), 2);
}

// A request with penalties needs host logits: while it runs, steps are synchronous (the pipeline
// drains first); the outputs still match.
TEST_F(EngineOverlapTest, PenaltiesFallBackToSynchronousSteps) {
    const auto ps = prompts(4);
    std::vector<Request> requests;
    requests.push_back(request(ps[0], 20));
    requests.push_back(request(ps[1], 8, {.temperature = 1.0f, .repetition_penalty = 1.3f, .seed = 5}));
    // While request 1 runs, every row is sampled on the host; after it, on the "device". Which steps
    // those are depends on when the engine admits each request, so a request sampled by both rules
    // must not depend on the rule: top_k 1.
    requests.push_back(request(ps[2], 20, {.temperature = 0.9f, .top_k = 1, .seed = 6}));
    requests.push_back(request(ps[3], 20));
    expect_same_as_synchronous({.host_sampling_runner = true}, requests);
    EXPECT_GT(counts_->num_logits_steps.load(), 0);
}

// kAuto pipelines exactly when the runner runs_async().
TEST_F(EngineOverlapTest, AutoFollowsRunsAsync) {
    const auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    const auto sync = run({.overlap = StepOverlap::kAuto, .async = false}, {request(prompt, 6)});
    EXPECT_EQ(counts_->num_submits.load(), 0);
    const auto async = run({.overlap = StepOverlap::kAuto, .async = true}, {request(prompt, 6)});
    EXPECT_GT(counts_->num_submits.load(), 0);
    EXPECT_EQ(async, sync);
}

// drain_and_stop() lets running requests finish and leaves nothing outstanding in the runner.
TEST_F(EngineOverlapTest, DrainAndStopCollectsEverything) {
    engine_ = make_engine({});
    std::vector<std::shared_ptr<CollectingSink>> sinks;
    const auto ps = prompts(3);
    for (size_t i = 0; i < ps.size(); ++i) {
        sinks.push_back(std::make_shared<CollectingSink>());
        Request r = request(ps[i], 10);
        r.id = {i + 1};
        r.sink = sinks.back();
        ASSERT_EQ(engine_->submit(std::move(r)), Engine::Admission::kAccepted);
    }
    engine_->drain_and_stop();
    for (auto& sink : sinks) {
        ASSERT_TRUE(sink->wait(std::chrono::seconds(1)));
        EXPECT_EQ(sink->finish, FinishReason::kLength);
        EXPECT_EQ(sink->num_generated, 10);
    }
    EXPECT_EQ(counts_->num_outstanding.load(), 0);
    EXPECT_GT(counts_->num_submits.load(), 0);
}

}  // namespace
}  // namespace hichat::engine
