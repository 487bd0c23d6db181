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
#include <vector>

#include "base/status.h"
#include "kv/block_manager.h"
#include "scheduler/step_plan.h"

namespace hichat::scheduler {

struct SchedulerConfig {
    int max_num_seqs = 64;                 // sequences running at once
    int max_num_tokens_per_step = 512;     // decode + prefill tokens per forward pass
    int prefill_chunk_tokens = 256;        // longest prefill piece of one sequence per step
    double priority_aging_per_s = 1.0;     // effective priority = priority - aging * seconds waited

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

private:
    void schedule_running(std::vector<SeqState*>& running, StepPlan& plan, int& budget);
    class BlocksInProgress;
    void admit_waiting(std::vector<SeqState*>& waiting, const std::vector<SeqState*>& running, int num_running,
                       StepPlan& plan, int& budget);
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
};

}  // namespace hichat::scheduler
