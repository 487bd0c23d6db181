// The latency targets in the real engine on the CPU, with models/default (8 layers, 384 wide): six
// streams decode while long prompts arrive. Arrivals are tied to the streams' progress (a prompt is
// submitted when stream 0 has produced so many tokens), never to the clock. Under the fixed token
// budget a long prompt's chunk goes beside the decodes whole (hundreds of tokens: a stall of every
// stream for that step); with --target-itl-ms set to four of the fixed run's median decode gaps, the
// scheduler gives the prompts only the few dozen tokens per step that its cost model fits within the
// target. Both runs first warm the cost model with the same short requests.
//
// What is asserted is what the scheduler decides (tokens per step), with a wide margin; the ITL each
// run achieved is printed, not asserted: latency is judged by benchmarks (docs/benchmarks.md, "Latency
// targets"), since on a shared 2-core machine a timed bound fails without a fault (CI, 2026-12-07: p99
// 22-26 ms against a bound of 20-24 in all five rounds, on a quiet machine).
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
    int max_prefill_beside_decodes = 0;   // the most prompt tokens in a step that also decoded the streams
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
        int num_reports = 0, max_prefill_beside_decodes = 0;
        EngineConfig cfg{.scheduler = sched, .on_step = [&](const StepReport& r) {
                             ++num_reports;
                             if (r.decode_rows >= 6)
                                 max_prefill_beside_decodes = std::max(max_prefill_beside_decodes, r.prefill_tokens);
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
        r.max_prefill_beside_decodes = max_prefill_beside_decodes;
        return r;
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
    uint64_t next_id_ = 1;
};

// The fixed budget puts a long prompt's chunk beside the decodes whole (up to the step's 512 tokens
// less the decode rows); the target, four decode gaps, leaves room for a few dozen: a quarter of the
// step budget is far above what the cost model allows and far below a whole chunk.
TEST_F(LatencyTargetEngineTest, TargetedItlSplitsPromptsBesideDecodesWhereTheFixedBudgetDoesNot) {
    const LoadResult fixed = run(0);
    const double target = 4 * fixed.p50;
    const LoadResult tuned = run(target);
    std::printf("fixed budget: ITL p50 %.2f ms, p99 %.2f ms (%lld steps), at most %d prompt tokens beside the decodes; "
                "--target-itl-ms %.2f: p50 %.2f ms, p99 %.2f ms (%lld steps, %lld over the target), at most %d\n",
                fixed.p50, fixed.p99, static_cast<long long>(fixed.steps), fixed.max_prefill_beside_decodes, target,
                tuned.p50, tuned.p99, static_cast<long long>(tuned.steps), static_cast<long long>(tuned.itl_misses),
                tuned.max_prefill_beside_decodes);
    EXPECT_EQ(fixed.itl_misses, 0) << "no target, no misses counted";
    EXPECT_EQ(fixed.num_reports, fixed.steps) << "every step reached the on_step hook";
    EXPECT_EQ(tuned.num_reports, tuned.steps) << "every step reached the on_step hook";
    EXPECT_GE(fixed.max_prefill_beside_decodes, 256) << "the fixed budget puts whole chunks beside the decodes";
    EXPECT_GT(tuned.max_prefill_beside_decodes, 0) << "the prompts still advance beside the decodes";
    EXPECT_LE(tuned.max_prefill_beside_decodes, 128) << "the target splits the prompts into pieces that fit it";
}

}  // namespace
}  // namespace hichat::engine
