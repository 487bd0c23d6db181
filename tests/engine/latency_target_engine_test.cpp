// The latency targets in the real engine on the CPU, with models/default (8 layers, 384 wide): six
// streams decode while long prompts arrive; their prefill chunks stall every stream for a whole step
// under the fixed token budget. Arrivals are tied to the streams' progress (a prompt is submitted when
// stream 0 has produced so many tokens), never to the clock. The fixed budget's p99 ITL is more than
// twice its median; with --target-itl-ms set to four of the fixed run's median decode gaps, the p99
// stays within twice the median (and within 1.5 times the target). Both runs first warm the cost model with the same short requests.
//
// Timing is what this test measures, so it is kept apart (RUN_SERIAL, its own ctest entry) and its
// bounds leave room: the fixed budget's chunks cost tens of decode steps here.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "common/fixtures.h"
#include "engine/engine.h"
#include "executor/cpu_runner.h"
#include "model/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace hichat::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Records when each token event arrived; wait() until the final one.
class TimedSink : public TokenSink {
public:
    void on_event(TokenEvent ev) override {
        std::lock_guard<std::mutex> lock(mu_);
        for (size_t i = 0; i < ev.token_ids.size(); ++i) times_.push_back(Clock::now());
        if (ev.finish != FinishReason::kNone) {
            done_ = true;
            cv_.notify_all();
        }
        cv_.notify_all();
    }
    bool wait_done(std::chrono::seconds timeout = std::chrono::seconds(300)) {
        std::unique_lock<std::mutex> lock(mu_);
        return cv_.wait_for(lock, timeout, [&] { return done_; });
    }
    // Waits until this stream has produced n tokens (or ended).
    void wait_tokens(size_t n) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::seconds(300), [&] { return done_ || times_.size() >= n; });
    }
    std::vector<double> gaps_ms() {
        std::lock_guard<std::mutex> lock(mu_);
        std::vector<double> g;
        for (size_t i = 1; i < times_.size(); ++i)
            g.push_back(std::chrono::duration<double, std::milli>(times_[i] - times_[i - 1]).count());
        return g;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Clock::time_point> times_;
    bool done_ = false;
};

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct LoadResult {
    double p50 = 0, p99 = 0;
    int64_t steps = 0, itl_misses = 0;
    int num_reports = 0;
    double decode_noise = 0;   // p99 / p50 of the decode-only steps' times: the machine's own jitter
};

class LatencyTargetEngineTest : public ::testing::Test {
protected:
    void SetUp() override {
        const std::string dir = testing::fixtures_root() + "/../../models/default";
        auto ckpt = model::Checkpoint::open(dir);
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        auto tok = tokenizer::Tokenizer::load(dir);
        ASSERT_TRUE(tok.ok()) << tok.status().message();
        tokenizer_ = std::move(tok).value();
    }

    Request request(int prompt_tokens, int max_tokens, std::shared_ptr<TokenSink> sink, int seed) {
        Request r;
        r.id = {next_id_++};
        for (int i = 0; i < prompt_tokens; ++i) r.prompt.push_back(100 + (seed * 131 + i * 17) % 7000);
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        r.sink = std::move(sink);
        return r;
    }

    LoadResult run(double target_itl_ms) {
        scheduler::SchedulerConfig sched{.max_num_seqs = 16, .max_num_tokens_per_step = 512, .prefill_chunk_tokens = 512};
        sched.target_itl_ms = target_itl_ms;
        int num_reports = 0;
        std::vector<double> decode_only_ms;
        EngineConfig cfg{.scheduler = sched, .on_step = [&](const StepReport& r) {
                             ++num_reports;
                             if (r.prefill_tokens == 0 && r.decode_rows >= 6) decode_only_ms.push_back(r.ms);
                         }};
        cfg.prefix_cache = false;
        auto runner = std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 1024});
        Engine engine(std::move(runner), *tokenizer_, cfg);
        // Warm-up: short prompts, one at a time, so the cost model has seen prefills and decodes.
        for (int i = 0; i < 6; ++i) {
            auto sink = std::make_shared<TimedSink>();
            engine.submit(request(64 + 32 * i, 8, sink, 1000 + i));
            EXPECT_TRUE(sink->wait_done());
        }
        std::vector<std::shared_ptr<TimedSink>> streams, prompts;
        for (int i = 0; i < 6; ++i) {
            streams.push_back(std::make_shared<TimedSink>());
            engine.submit(request(16, 320, streams.back(), i));
        }
        for (int k = 0; k < 9; ++k) {   // a long prompt each time stream 0 is 30 tokens further
            streams[0]->wait_tokens(static_cast<size_t>(20 + 30 * k));
            prompts.push_back(std::make_shared<TimedSink>());
            engine.submit(request(900, 1, prompts.back(), 100 + k));
        }
        std::vector<double> gaps;
        for (auto& s : streams) {
            EXPECT_TRUE(s->wait_done());
            const auto g = s->gaps_ms();
            gaps.insert(gaps.end(), g.begin(), g.end());
        }
        for (auto& p : prompts) EXPECT_TRUE(p->wait_done());
        LoadResult r{.p50 = percentile(gaps, 0.5), .p99 = percentile(gaps, 0.99)};
        engine.drain_and_stop();   // the stats then count every step
        const EngineStats stats = engine.stats();
        r.steps = stats.num_steps;
        r.itl_misses = stats.itl_target_misses;
        r.num_reports = num_reports;
        r.decode_noise = percentile(decode_only_ms, 0.99) / std::max(percentile(decode_only_ms, 0.5), 1e-9);
        return r;
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    uint64_t next_id_ = 1;
};

// Each round runs the fixed budget, then the target set from that run. A round is a measurement, and
// the machine may be shared: a round counts only where the decode-only steps (the same work every
// time) ran within kSteady of their median at p99 in both runs; the test takes up to kRounds rounds and
// passes on the first steady one that holds, fails if steady rounds never held, and skips (visibly,
// with the figures) when no round was steady. Every round is printed.
constexpr double kSteady = 1.6;
// Five, not three: on the 2-core CI machine a release run of 2026-12-06 found none of three rounds
// steady (and skipped), where the ASan run of the same CI passed.
constexpr int kRounds = 5;

// Under AddressSanitizer the engine runs many times slower and its timing judges nothing about the
// scheduler (the release build's run does): one round there, for the sanitizers to watch the engine,
// with the checks that do not depend on time, then a visible skip (it took 268 s of CI's serial time).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

TEST_F(LatencyTargetEngineTest, TargetedItlHoldsP99WithinTwiceTheMedianWhereTheFixedBudgetDoesNot) {
    bool held = false;
    int steady_rounds = 0;
    for (int round = 1; round <= kRounds && !held; ++round) {
        const LoadResult fixed = run(0);
        // The target: four decode gaps of the fixed run (its median is a decode-only step), room for a
        // few dozen prompt tokens beside the decodes in each step.
        const double target = 4 * fixed.p50;
        const LoadResult tuned = run(target);
        std::printf("round %d: fixed budget: ITL p50 %.2f ms, p99 %.2f ms (%lld steps); --target-itl-ms %.2f: p50 "
                    "%.2f ms, p99 %.2f ms (%lld steps, %lld over the target); decode-only steps p99/p50 %.2f / %.2f\n",
                    round, fixed.p50, fixed.p99, static_cast<long long>(fixed.steps), target, tuned.p50, tuned.p99,
                    static_cast<long long>(tuned.steps), static_cast<long long>(tuned.itl_misses), fixed.decode_noise,
                    tuned.decode_noise);
        EXPECT_EQ(fixed.itl_misses, 0) << "no target, no misses counted";
        EXPECT_EQ(tuned.num_reports, tuned.steps) << "every step reached the on_step hook";
        if (kSanitized) GTEST_SKIP() << "latency is judged by the release build's run, not under the sanitizers";
        EXPECT_GT(fixed.p99, 2 * fixed.p50) << "the fixed budget stalls the streams";
        if (fixed.decode_noise > kSteady || tuned.decode_noise > kSteady) continue;   // a busy machine: no verdict
        ++steady_rounds;
        held = tuned.p99 <= 2 * tuned.p50 && tuned.p99 <= 1.5 * target;
    }
    if (steady_rounds == 0) GTEST_SKIP() << "the machine was too busy to judge latency in all " << kRounds << " rounds (see above)";
    EXPECT_TRUE(held) << "in no steady round did the targeted scheduler keep p99 ITL within twice its median and "
                         "1.5 times the target";
}

}  // namespace
}  // namespace hichat::engine
