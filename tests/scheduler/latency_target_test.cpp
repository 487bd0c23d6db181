// The latency targets against a simulated machine: a discrete-event loop runs the Scheduler over
// arrival patterns, each step taking the time a known cost function gives (the scheduler learns it
// only from the observed step times), and measures every stream's inter-token latencies and time to
// first token in simulated time. The fixed token budget misses the ITL target in each pattern; the
// targeted configuration holds it, keeps TTFT bounded and finishes every request.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scheduler/scheduler.h"

namespace hichat::scheduler {
namespace {

using Clock = std::chrono::steady_clock;

// A GPU-like machine: a fixed 4 ms, the linear layers' 0.03 ms per prefill token, 0.05 ms per decode
// row, attention per key.
double machine_ms(const StepFeatures& f) {
    return 4.0 + 0.03 * f.prefill_tokens + 0.05 * f.decode_rows + 4e-5 * f.decode_keys + 2e-6 * f.prefill_key_pairs;
}

struct Arrival {
    double at_ms;
    int prompt_tokens, output_tokens, priority = 0;
    std::string owner;   // the API key's id; empty: none
};

struct Outcome {
    std::vector<double> itl_ms;     // every gap between two tokens of one stream, from warmup_ms on
    std::vector<double> ttft_ms;    // per request (priority class filter applied by the caller)
    std::map<int, std::vector<double>> itl_by_priority, ttft_by_priority;
    std::map<std::string, std::vector<double>> ttft_by_owner;
    // Tokens computed per owner in the steps planned while every owner had a sequence waiting.
    std::map<std::string, double> contended_tokens;
    int finished = 0, total = 0;   // of `arrivals` (background streams apart)
    int background_finished = 0;
    int64_t steps = 0;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

using Machine = std::function<double(const StepFeatures&, int64_t step)>;

// Background work as the batch runner sends it: `concurrency` streams at all times (one finished, the
// next starts), until every arrival has finished.
struct Background {
    int concurrency = 0, prompt_tokens = 0, output_tokens = 0, priority = 0;
};

Outcome simulate(const SchedulerConfig& config, const std::vector<Arrival>& arrivals, double warmup_ms = 300,
                 const Machine& machine = [](const StepFeatures& f, int64_t) { return machine_ms(f); },
                 const Background& background = {}) {
    kv::BlockManager blocks(20000, 16);
    Scheduler sched(config, blocks);
    const Clock::time_point t0 = Clock::now();
    auto at = [&](double ms) { return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms)); };
    struct Stream {
        SeqState state;
        Arrival arrival;
        int generated = 0;
        double last_token_ms = -1;
    };
    std::deque<Stream> streams;
    std::vector<SeqState*> live;
    Outcome out;
    out.total = static_cast<int>(arrivals.size());
    size_t next = 0;
    double now = 0;
    int background_due = background.concurrency;   // background streams to start
    while (out.finished < out.total) {
        for (; background_due > 0; --background_due) {
            Stream& s = streams.emplace_back();
            s.arrival = {now, background.prompt_tokens, background.output_tokens, background.priority, "background"};
            s.state.id = streams.size();
            s.state.priority = s.arrival.priority;
            s.state.arrival = at(now);
            s.state.num_tokens = s.arrival.prompt_tokens;
            live.push_back(&s.state);
        }
        while (next < arrivals.size() && arrivals[next].at_ms <= now) {
            Stream& s = streams.emplace_back();
            s.arrival = arrivals[next++];
            s.state.id = streams.size();
            s.state.priority = s.arrival.priority;
            s.state.owner = owner_id(s.arrival.owner);
            s.state.arrival = at(s.arrival.at_ms);
            s.state.num_tokens = s.arrival.prompt_tokens;
            live.push_back(&s.state);
        }
        const StepPlan plan = sched.schedule(live, at(now));
        if (plan.empty()) {
            EXPECT_LT(next, arrivals.size()) << "idle with requests left unfinished";
            if (next >= arrivals.size()) break;
            now = arrivals[next].at_ms;
            continue;
        }
        std::map<std::string, int> waiting_by_owner;
        for (const Stream& s : streams)
            if (s.state.status == SeqStatus::kWaiting) ++waiting_by_owner[s.arrival.owner];
        std::map<std::string, int> owners;
        for (const Stream& s : streams) owners[s.arrival.owner] += s.generated < s.arrival.output_tokens;
        bool contended = owners.size() > 1;
        for (const auto& [owner, live_count] : owners) contended = contended && waiting_by_owner[owner] > 0;
        if (contended)
            for (const ScheduledChunk& c : plan.chunks) out.contended_tokens[streams[c.seq->id - 1].arrival.owner] += c.num_tokens;
        const StepFeatures features = plan_features(plan);
        const double step_ms = machine(features, out.steps);
        now += step_ms;
        ++out.steps;
        sched.observe_step(features, step_ms);
        for (const ScheduledChunk& c : plan.chunks) {
            const bool samples = c.samples();
            c.seq->num_tokens_cached += c.num_tokens;
            if (!samples) continue;
            Stream& s = streams[c.seq->id - 1];
            c.seq->num_tokens++;
            ++s.generated;
            if (s.last_token_ms < 0) {
                out.ttft_ms.push_back(now - s.arrival.at_ms);
                out.ttft_by_priority[s.arrival.priority].push_back(now - s.arrival.at_ms);
                out.ttft_by_owner[s.arrival.owner].push_back(now - s.arrival.at_ms);
            } else if (now >= warmup_ms) {
                out.itl_ms.push_back(now - s.last_token_ms);
                out.itl_by_priority[s.arrival.priority].push_back(now - s.last_token_ms);
            }
            s.last_token_ms = now;
            if (s.generated == s.arrival.output_tokens) {
                sched.release(*c.seq);
                std::erase(live, c.seq);
                const bool is_background = background.concurrency > 0 && s.arrival.owner == "background";
                if (is_background) {
                    ++out.background_finished;
                    ++background_due;
                } else {
                    ++out.finished;
                }
            }
        }
    }
    return out;
}

// 24 streams decoding at all times, and a long prompt every 300 ms (as fast as the ITL-capped prefill
// takes them: faster arrivals would put TTFT at risk, which the targets then trade ITL for).
std::vector<Arrival> long_prompts_beside_streams() {
    std::vector<Arrival> a;
    for (int i = 0; i < 24; ++i) a.push_back({i * 2.0, 64, 800});
    for (int i = 0; i < 12; ++i) a.push_back({100.0 + 300.0 * i, 3000, 16});
    std::sort(a.begin(), a.end(), [](const Arrival& x, const Arrival& y) { return x.at_ms < y.at_ms; });
    return a;
}

// Bursts of 16 medium prompts at once, every 400 ms, each streaming 120 tokens.
std::vector<Arrival> bursts() {
    std::vector<Arrival> a;
    for (int burst = 0; burst < 6; ++burst)
        for (int i = 0; i < 16; ++i) a.push_back({400.0 * burst, 700, 120});
    return a;
}

SchedulerConfig fixed() { return {.max_num_seqs = 64, .max_num_tokens_per_step = 1024, .prefill_chunk_tokens = 512}; }

SchedulerConfig targeted(double itl_ms, double ttft_ms) {
    SchedulerConfig c = fixed();
    c.target_itl_ms = itl_ms;
    c.target_ttft_ms = ttft_ms;
    return c;
}

TEST(LatencyTargets, LongPromptsBesideStreams) {
    const auto arrivals = long_prompts_beside_streams();
    const Outcome base = simulate(fixed(), arrivals);
    const Outcome tuned = simulate(targeted(12.0, 2000.0), arrivals);
    EXPECT_EQ(base.finished, base.total);
    EXPECT_EQ(tuned.finished, tuned.total);
    const double base_p99 = percentile(base.itl_ms, 0.99), tuned_p99 = percentile(tuned.itl_ms, 0.99);
    std::printf("long prompts: fixed p50/p99 ITL %.1f / %.1f ms, TTFT p99 %.0f ms; targeted %.1f / %.1f ms, "
                "TTFT p99 %.0f ms (%lld vs %lld steps)\n",
                percentile(base.itl_ms, 0.5), base_p99, percentile(base.ttft_ms, 0.99), percentile(tuned.itl_ms, 0.5),
                tuned_p99, percentile(tuned.ttft_ms, 0.99), static_cast<long long>(base.steps),
                static_cast<long long>(tuned.steps));
    EXPECT_GT(base_p99, 12.0) << "the fixed budget misses the target";
    EXPECT_LE(tuned_p99, 12.0 * 1.05) << "the targeted scheduler holds it";
    EXPECT_LE(percentile(tuned.ttft_ms, 0.99), 2000.0 * 1.1) << "TTFT stays bounded";
}

TEST(LatencyTargets, TtftIsBoundedWhenPromptsComeFasterThanTheCappedPrefill) {
    // A 3000-token prompt every 120 ms: more prefill than steps of 12 ms leave room for. Without the
    // TTFT target the queue of prompts grows for the whole run; with it, prompts at risk get full
    // chunks (and those steps miss the ITL target).
    std::vector<Arrival> a;
    for (int i = 0; i < 24; ++i) a.push_back({i * 2.0, 64, 800});
    for (int i = 0; i < 12; ++i) a.push_back({100.0 + 120.0 * i, 3000, 16});
    std::sort(a.begin(), a.end(), [](const Arrival& x, const Arrival& y) { return x.at_ms < y.at_ms; });
    const Outcome itl_only = simulate(targeted(12.0, 0.0), a);
    const Outcome both = simulate(targeted(12.0, 800.0), a);
    EXPECT_EQ(both.finished, both.total);
    std::printf("prompts faster than the capped prefill: ITL target only: TTFT p99 %.0f ms, p99 ITL %.1f ms; with "
                "TTFT 800 ms: TTFT p99 %.0f ms, p99 ITL %.1f ms\n",
                percentile(itl_only.ttft_ms, 0.99), percentile(itl_only.itl_ms, 0.99), percentile(both.ttft_ms, 0.99),
                percentile(both.itl_ms, 0.99));
    EXPECT_GT(percentile(itl_only.ttft_ms, 0.99), 800.0);
    EXPECT_LE(percentile(both.ttft_ms, 0.99), 800.0 * 1.1);
    EXPECT_LE(percentile(itl_only.itl_ms, 0.99), 12.0 * 1.05);
}

// A machine the linear model cannot fit: past 512 rows the linear layers turn compute-bound (a
// steeper slope), and every 13th step the host stalls and the step takes 1.6 times as long. The
// planning leaves the headroom that the observed slow steps ask for (StepCostModel::slow_ratio).
TEST(LatencyTargets, AMachineTheModelCannotFitStillMostlyHoldsTheTarget) {
    const Machine knee = [](const StepFeatures& f, int64_t step) {
        const double rows = f.prefill_tokens + f.decode_rows;
        const double linear = 0.03 * f.prefill_tokens + 0.05 * f.decode_rows;
        const double ms = 4.0 + std::max(linear, 0.06 * rows - 10.0) + 4e-5 * f.decode_keys + 2e-6 * f.prefill_key_pairs;
        return step % 13 == 0 ? 1.6 * ms : ms;
    };
    std::vector<Arrival> a;
    for (int i = 0; i < 200; ++i) a.push_back({i * 3.0, 128, 128});
    for (int i = 0; i < 200; ++i) a.push_back({600.0 + i * 3.0, 128, 128});
    const Outcome base = simulate(fixed(), a, 300, knee);
    const Outcome tuned = simulate(targeted(25.0, 0), a, 300, knee);
    EXPECT_EQ(tuned.finished, tuned.total);
    std::printf("knee + stalls: fixed p50/p99 ITL %.1f / %.1f ms; targeted %.1f / %.1f ms (%lld vs %lld steps)\n",
                percentile(base.itl_ms, 0.5), percentile(base.itl_ms, 0.99), percentile(tuned.itl_ms, 0.5),
                percentile(tuned.itl_ms, 0.99), static_cast<long long>(base.steps), static_cast<long long>(tuned.steps));
    EXPECT_GT(percentile(base.itl_ms, 0.99), 30.0);
    // Planned to 0.9 of the target regardless of the slow steps, p99 came out at 27.6 ms here (24.6
    // with the headroom).
    EXPECT_LE(percentile(tuned.itl_ms, 0.99), 25.0 * 1.05) << "the headroom follows the slow steps";
}

// The first wave of a cold server: 256 streams arrive at once. The first step prefills the whole
// budget (nothing decodes yet); until the cost model has seen enough steps, a step that decodes takes
// only a small share of the budget in prefill, never a full 8192-token step beside the first streams.
TEST(LatencyTargets, ColdStartStepsBesideDecodesStaySmall) {
    const Machine gpu = [](const StepFeatures& f, int64_t) {
        return 5.0 + 0.022 * f.prefill_tokens + 0.02 * f.decode_rows + 4e-5 * f.decode_keys + 2e-6 * f.prefill_key_pairs;
    };
    std::vector<Arrival> a;
    for (int i = 0; i < 256; ++i) a.push_back({0.0, 128, 128});
    SchedulerConfig c = {.max_num_seqs = 256, .max_num_tokens_per_step = 8192, .prefill_chunk_tokens = 2048};
    const Outcome base = simulate(c, a, 0, gpu);
    c.target_itl_ms = 25;
    const Outcome tuned = simulate(c, a, 0, gpu);
    EXPECT_EQ(tuned.finished, tuned.total);
    const double base_max = percentile(base.itl_ms, 1.0), tuned_max = percentile(tuned.itl_ms, 1.0);
    std::printf("cold start, 256 streams at once: worst ITL %.1f ms untargeted, %.1f ms with a 25 ms target\n",
                base_max, tuned_max);
    EXPECT_GT(base_max, 100.0) << "8192-token steps beside the first streams";
    EXPECT_LE(tuned_max, 25.0);
}

TEST(LatencyTargets, Bursts) {
    const auto arrivals = bursts();
    const Outcome base = simulate(fixed(), arrivals, 0);
    const Outcome tuned = simulate(targeted(15.0, 3000.0), arrivals, 0);
    EXPECT_EQ(tuned.finished, tuned.total);
    const double base_p99 = percentile(base.itl_ms, 0.99), tuned_p99 = percentile(tuned.itl_ms, 0.99);
    std::printf("bursts: fixed p99 ITL %.1f ms, TTFT p99 %.0f ms; targeted %.1f ms, TTFT p99 %.0f ms\n", base_p99,
                percentile(base.ttft_ms, 0.99), tuned_p99, percentile(tuned.ttft_ms, 0.99));
    EXPECT_GT(base_p99, 15.0);
    EXPECT_LE(tuned_p99, 15.0 * 1.05);
    EXPECT_LE(percentile(tuned.ttft_ms, 0.99), 3000.0 * 1.1);
}

TEST(LatencyTargets, MixedPrioritiesOnlyTheInteractiveClassIsHeld) {
    // Interactive streams (priority 0, ITL target 12 ms) beside batch work (priority 10, no target) that
    // keeps sending long prompts: the batch prompts' chunks shrink to what the interactive target allows.
    std::vector<Arrival> a;
    for (int i = 0; i < 16; ++i) a.push_back({i * 3.0, 100, 300, 0});
    for (int i = 0; i < 20; ++i) a.push_back({50.0 + 60.0 * i, 2500, 32, 10});
    std::sort(a.begin(), a.end(), [](const Arrival& x, const Arrival& y) { return x.at_ms < y.at_ms; });
    SchedulerConfig c = fixed();
    c.priority_targets = {{.max_priority = 0, .itl_ms = 12.0, .ttft_ms = 1000.0}};
    const Outcome base = simulate(fixed(), a);
    const Outcome tuned = simulate(c, a);
    EXPECT_EQ(tuned.finished, tuned.total);
    const double base_p99 = percentile(base.itl_by_priority.at(0), 0.99);
    const double tuned_p99 = percentile(tuned.itl_by_priority.at(0), 0.99);
    std::printf("mixed priorities: interactive p99 ITL fixed %.1f ms, targeted %.1f ms; batch TTFT p99 %.0f ms\n",
                base_p99, tuned_p99, percentile(tuned.ttft_by_priority.at(10), 0.99));
    EXPECT_GT(base_p99, 12.0);
    EXPECT_LE(tuned_p99, 12.0 * 1.05);
}

// Interactive requests (128/128, one every 125 ms) beside 64 batch lines at all times (60-token prompts,
// 64 tokens each, least urgent): lines that start together finish together and are replaced together,
// and without a limit their prefills make long steps that newcomers wait behind. Capped to the
// background share of a step while interactive work is present, the interactive p99 TTFT comes back
// to the run without the batch plus the batch's decode rows, and the batch still moves.
TEST(BackgroundWork, CappedPrefillKeepsInteractiveTtftNearTheRunWithoutIt) {
    // A GPU-like step: a fixed 5 ms, 0.022 ms per prefill token, 0.01 ms per decode row.
    const Machine gpu = [](const StepFeatures& f, int64_t) {
        return 5.0 + 0.022 * f.prefill_tokens + 0.01 * f.decode_rows + 4e-5 * f.decode_keys + 2e-6 * f.prefill_key_pairs;
    };
    std::vector<Arrival> a;
    for (int i = 0; i < 200; ++i) a.push_back({125.0 * i + 37.0 * ((i * 7) % 5), 128, 128});
    std::sort(a.begin(), a.end(), [](const Arrival& x, const Arrival& y) { return x.at_ms < y.at_ms; });
    constexpr int kBatch = 1'000'000;
    const Background lines{.concurrency = 64, .prompt_tokens = 60, .output_tokens = 64, .priority = kBatch};
    SchedulerConfig c = fixed();
    c.max_num_seqs = 128;
    const Outcome alone = simulate(c, a, 0, gpu);
    const Outcome uncapped = simulate(c, a, 0, gpu, lines);
    c.background_priority = kBatch;
    const Outcome capped = simulate(c, a, 0, gpu, lines);
    const double p_alone = percentile(alone.ttft_by_priority.at(0), 0.99);
    const double p_uncapped = percentile(uncapped.ttft_by_priority.at(0), 0.99);
    const double p_capped = percentile(capped.ttft_by_priority.at(0), 0.99);
    std::printf("interactive p99 TTFT: alone %.1f ms; beside 64 batch lines %.1f ms uncapped (%d lines done), %.1f ms "
                "capped (%d lines done); p99 ITL %.1f / %.1f / %.1f ms\n",
                p_alone, p_uncapped, uncapped.background_finished, p_capped, capped.background_finished,
                percentile(alone.itl_ms, 0.99), percentile(uncapped.itl_by_priority.at(0), 0.99),
                percentile(capped.itl_by_priority.at(0), 0.99));
    EXPECT_EQ(capped.finished, capped.total);
    EXPECT_GT(p_uncapped, 1.5 * p_alone) << "the uncapped batch's prefills delay first tokens";
    // What stays: the 64 batch decode rows (0.64 ms a step) and, in the step a newcomer waits behind, a
    // 64-token background share (1.4 ms).
    EXPECT_LE(p_capped, 1.3 * p_alone);
    EXPECT_GT(capped.background_finished, uncapped.background_finished / 4) << "the batch still moves";
}

TEST(LatencyTargets, WithoutTargetsThePlansAreTheFixedBudgets) {
    const auto arrivals = long_prompts_beside_streams();
    const Outcome a = simulate(fixed(), arrivals);
    SchedulerConfig c = fixed();
    c.min_prefill_tokens_per_step = 64;   // only read with targets
    const Outcome b = simulate(c, arrivals);
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.itl_ms, b.itl_ms);
}

// One key floods the queue; another sends a few requests a little later. Without keys (one account)
// those wait behind the whole flood; with the fair share they go in among the flood's.
TEST(FairShare, OneKeysFloodDoesNotStarveAnother) {
    auto arrivals = [](bool keys) {
        std::vector<Arrival> a;
        for (int i = 0; i < 60; ++i) a.push_back({0.0, 500, 50, 0, keys ? "key-flood" : ""});
        for (int i = 0; i < 6; ++i) a.push_back({100.0, 100, 50, 0, keys ? "key-other" : ""});
        return a;
    };
    SchedulerConfig c = fixed();
    c.max_num_seqs = 8;
    const Outcome shared = simulate(c, arrivals(false));
    const Outcome fair = simulate(c, arrivals(true));
    EXPECT_EQ(fair.finished, fair.total);
    // In the shared run the late six are the last six TTFTs recorded (by arrival order they go last).
    std::vector<double> late_shared(shared.ttft_ms.end() - 6, shared.ttft_ms.end());
    const double late_fair = percentile(fair.ttft_by_owner.at("key-other"), 1.0);
    std::printf("fair share: the other key's worst TTFT %.0f ms alone in line behind the flood, %.0f ms with "
                "the fair share (the flood's %.0f ms)\n",
                percentile(late_shared, 1.0), late_fair, percentile(fair.ttft_by_owner.at("key-flood"), 1.0));
    EXPECT_LT(late_fair * 4, percentile(late_shared, 1.0));
}

TEST(FairShare, WeightsSplitTheTokensUnderContention) {
    std::vector<Arrival> a;
    for (int i = 0; i < 40; ++i) a.push_back({0.0, 300, 40, 0, "key-a"});
    for (int i = 0; i < 40; ++i) a.push_back({0.0, 300, 40, 0, "key-b"});
    SchedulerConfig c = fixed();
    c.max_num_seqs = 8;
    c.owner_weights = {{.owner = owner_id("key-a"), .weight = 3.0}};
    const Outcome o = simulate(c, a);
    EXPECT_EQ(o.finished, o.total);
    const double ta = o.contended_tokens.at("key-a"), tb = o.contended_tokens.at("key-b");
    std::printf("weights 3:1: tokens while both waited %.0f : %.0f (%.2f)\n", ta, tb, ta / tb);
    EXPECT_GT(ta / tb, 2.2);
    EXPECT_LT(ta / tb, 4.0);
    c.owner_weights.clear();
    const Outcome even = simulate(c, a);
    const double ea = even.contended_tokens.at("key-a"), eb = even.contended_tokens.at("key-b");
    std::printf("equal weights: %.0f : %.0f (%.2f)\n", ea, eb, ea / eb);
    EXPECT_NEAR(ea / eb, 1.0, 0.25);
}

TEST(LatencyTargets, ConfigIsValidated) {
    SchedulerConfig c = fixed();
    c.target_itl_ms = -1;
    EXPECT_FALSE(c.validate().ok());
    c = fixed();
    c.priority_targets = {{.max_priority = 5}, {.max_priority = 5}};
    EXPECT_FALSE(c.validate().ok());
    c = fixed();
    c.min_prefill_tokens_per_step = 0;
    EXPECT_FALSE(c.validate().ok());
    c = fixed();
    c.background_prefill_tokens_per_step = 0;
    EXPECT_FALSE(c.validate().ok());
    c = fixed();
    c.owner_weights = {{.owner = 7, .weight = 0}};
    EXPECT_FALSE(c.validate().ok());
    EXPECT_TRUE(targeted(25, 500).validate().ok());
}

}  // namespace
}  // namespace hichat::scheduler
