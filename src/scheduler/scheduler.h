// Scheduler: continuous (iteration-level) batching. Every step it lets every running sequence decode,
// continues chunked prefills, and admits waiting sequences by effective priority while the token budget
// and the KV blocks allow; when KV runs out it preempts the newest, least urgent sequence (its KV is
// recomputed later, from the prefix cache where its blocks survive). An admitted sequence starts with
// the longest cached prefix of its tokens (never its last token, whose logits must be computed) and
// prefills only the rest. Engine thread only.
//
// Cold duplicate hold-back: the cache keys a block only once its KV is computed, so sequences with the
// same prompt admitted together (n > 1 children, many users sending one system prompt at once) would
// each compute it. A waiting sequence whose next uncached full block (within the blocks it may take
// from the cache) has the key of a block that a running sequence has not computed yet is not admitted
// this step; it takes the block from the cache once that sequence's prefill is past it. It cannot
// starve: it waits only while the holder is running and its computed tokens have not reached the end of
// that block, and the holder's prefill advances every step it gets budget (a holder preempted, finished
// or cancelled is no longer running). A held-back sequence does not block those behind it.
#pragma once

#include <chrono>
#include <limits>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_manager.h"
#include "scheduler/step_cost_model.h"
#include "scheduler/step_plan.h"

namespace hichat::scheduler {

// An owner's weight in the fair share (default 1): twice the weight, twice the tokens under contention.
struct OwnerWeight {
    uint64_t owner = 0;   // owner_id()
    double weight = 1;
};

// Latency targets of the sequences whose priority is at most max_priority (the first such entry).
struct PriorityTargets {
    int max_priority = 0;
    double itl_ms = 0;    // 0: none
    double ttft_ms = 0;   // 0: none
};

struct SchedulerConfig {
    int max_num_seqs = 64;                 // sequences running at once
    int max_num_tokens_per_step = 512;     // decode + prefill tokens per forward pass
    int prefill_chunk_tokens = 256;        // longest prefill piece of one sequence per step
    double priority_aging_per_s = 1.0;     // effective priority = priority - aging * seconds waited
    // Latency targets (0: none; with neither, the fixed token budget above decides alone). A step
    // that decodes a sequence with an ITL target holds, beyond its decodes, only the prefill tokens
    // and admissions whose predicted step time (StepCostModel) stays within the strictest such target,
    // but at least min_prefill_tokens_per_step, so that prefill always advances. A waiting or
    // prefilling sequence that would miss its TTFT target at that pace gets a full chunk (and is
    // admitted) regardless: TTFT is bounded at the cost of that step's ITL.
    double target_itl_ms = 0;
    double target_ttft_ms = 0;
    std::vector<PriorityTargets> priority_targets;   // per class, ascending max_priority; else the above
    int min_prefill_tokens_per_step = 16;
    // Fair share across owners (API keys): among waiting sequences of the priority that goes next,
    // the owner with the fewest tokens computed lately (per weight; halving every half-life) goes
    // first, so one owner's flood cannot starve the others. One owner (no keys): arrival order.
    std::vector<OwnerWeight> owner_weights;
    double fair_share_half_life_s = 10.0;
    // Background work (the Batch API's lines: serve sets background_priority to their priority):
    // sequences whose priority is at least background_priority prefill nothing while a more urgent
    // sequence waits or prefills, share background_prefill_tokens_per_step prefill tokens per step
    // while more urgent ones only decode, and take the whole budget when there are none (their decodes
    // are never limited), so that background prefills never make the long steps that interactive
    // requests wait behind. Under a sustained interactive overload the background waits.
    int background_priority = std::numeric_limits<int>::max();   // max: no background class
    int background_prefill_tokens_per_step = 64;

    Status validate() const;
};

// Prefix-cache lookups at admission, in tokens. Sequences admitted again after a preemption are
// counted apart, so that finding their own KV again does not inflate the hit rate.
struct PrefixCacheStats {
    int64_t queried_tokens = 0, hit_tokens = 0;
    int64_t host_hit_tokens = 0;  // of hit_tokens, found in the host tier
    int64_t preempted_queried_tokens = 0, preempted_hit_tokens = 0;
    int64_t held_back_steps = 0;  // waiting sequences passed over by the cold duplicate hold-back, per step
};

class Scheduler {
public:
    Scheduler(const SchedulerConfig& config, kv::BlockManager& blocks);

    // `seqs`: every unfinished sequence. Changes status (waiting -> running on admission, running ->
    // waiting on preemption), blocks and admission_order; never num_tokens or num_tokens_cached
    // except to reset a preempted sequence's cache to 0.
    StepPlan schedule(const std::vector<SeqState*>& seqs, std::chrono::steady_clock::time_point now);

    // Returns a finished or cancelled sequence's blocks; its full blocks stay cached.
    void release(SeqState& seq);

    const PrefixCacheStats& prefix_cache_stats() const { return prefix_stats_; }

    // A step ran in `ms`; `features`: plan_features() of its plan, taken when it was planned.
    void observe_step(const StepFeatures& features, double ms) { cost_.observe(features, ms); }
    const StepCostModel& cost_model() const { return cost_; }
    // The ITL and TTFT targets of a sequence's class (0: none).
    PriorityTargets targets_of(const SeqState& s) const;
    // The predicted time until `waiting_tokens` prompt tokens have been prefilled beside `decodes`,
    // in steps of the full token budget; 0 until the cost model is ready (no prediction).
    double predict_prefill_ms(int64_t waiting_tokens, const StepFeatures& decodes) const;

private:
    // What this step holds so far, for the latency targets.
    struct StepLoad {
        StepFeatures features;
        double itl_ms = 0;          // strictest ITL target of the step's decoding sequences; 0: none
        int prefill_granted = 0;    // prefill tokens planned so far
        int background_left = 0;    // prefill tokens background sequences may still take this step
    };
    bool background(const SeqState& s) const { return s.priority >= config_.background_priority; }
    // n limited to what background prefill has left this step (n itself for other sequences).
    int background_allowed(const SeqState& seq, int n) const {
        return background(seq) ? std::min(n, load_.background_left) : n;
    }
    bool targets_on() const;
    // The predicted time a step may take under an ITL target (headroom for the model's error).
    double planned_ms(double target_ms) const;
    // The largest chunk of `seq` (at most n_max) whose step the cost model predicts within the target.
    int largest_chunk_within_target(const SeqState& seq, int n_max) const;
    // The prefill tokens (at most n_max) a step may still take under an ITL target before the cost
    // model is ready.
    int cold_prefill_tokens(int n_max) const;
    // Tokens of `seq`'s next prefill chunk (at most n_max) that the latency targets allow this step.
    int prefill_allowed(const SeqState& seq, int n_max, std::chrono::steady_clock::time_point now) const;
    // Whether `seq` (waiting or prefilling) would miss its TTFT target at the ITL-capped pace.
    bool ttft_at_risk(const SeqState& seq, int n_capped, std::chrono::steady_clock::time_point now) const;
    // Whether one more decoding sequence (context `context`) keeps the decodes within the ITL target.
    bool admission_fits(const SeqState& seq, std::chrono::steady_clock::time_point now) const;
    void add_to_load(const SeqState& seq, int num_tokens);
    // Fair share: service_ decays to `now`; charge() adds a plan's tokens; the waiting order is made
    // by next_waiting(), one pick at a time.
    void decay_service(std::chrono::steady_clock::time_point now);
    void charge(const StepPlan& plan);
    double weight_of(uint64_t owner) const;
    // Removes and returns the next waiting sequence to consider: of the explicit priority whose best
    // effective priority is lowest (aging as ever), the least-served owner's (service plus what the
    // picks so far will compute, per weight), its oldest; nullptr when none is left.
    SeqState* next_waiting(std::vector<SeqState*>& remaining, std::unordered_map<uint64_t, double>& projected,
                           std::chrono::steady_clock::time_point now) const;

    void schedule_running(std::vector<SeqState*>& running, StepPlan& plan, int& budget,
                          std::chrono::steady_clock::time_point now);
    class BlocksInProgress;
    void admit_waiting(std::vector<SeqState*>& waiting, const std::vector<SeqState*>& running, int num_running,
                       StepPlan& plan, int& budget, std::chrono::steady_clock::time_point now);
    // The cold duplicate hold-back: whether `seq`'s next uncached full block is one that a running
    // sequence computes now (in `in_progress`).
    bool held_back(const SeqState& seq, const BlocksInProgress& in_progress) const;
    // Frees KV by preempting the least urgent running sequence other than `keep` (its chunk, if
    // already planned, is dropped and its tokens return to `budget`); false if there is none.
    bool preempt_one(std::vector<SeqState*>& running, const SeqState* keep, StepPlan& plan, int& budget);
    double effective_priority(const SeqState& s, std::chrono::steady_clock::time_point now) const;
    // Frees a running sequence's KV (its full blocks stay cached) and sends it back to waiting.
    void preempt(SeqState& seq, StepPlan& plan);
    // Takes the longest cached prefix of `seq` and KV for the rest if the pool allows it while
    // keeping `reserve` blocks free; false (nothing taken) otherwise.
    bool allocate_for_admission(SeqState& seq, int reserve);

    SchedulerConfig config_;
    kv::BlockManager& blocks_;
    uint64_t next_admission_ = 0;
    PrefixCacheStats prefix_stats_;
    StepCostModel cost_;
    StepLoad load_;   // of the step being planned
    std::unordered_map<uint64_t, double> service_;   // tokens computed per owner, decayed
    std::chrono::steady_clock::time_point service_time_{};
};

}  // namespace hichat::scheduler
