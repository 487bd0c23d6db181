// Scheduler: continuous (iteration-level) batching. Every step it lets every running sequence decode,
// continues chunked prefills, and admits waiting sequences by effective priority while the token budget
// and the KV blocks allow; when KV runs out it preempts the newest, least urgent sequence (its KV is
// recomputed later). Engine thread only.
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

class Scheduler {
public:
    Scheduler(const SchedulerConfig& config, kv::BlockManager& blocks);

    // `seqs`: every unfinished sequence. Changes status (waiting -> running on admission, running ->
    // waiting on preemption), blocks and admission_order; never num_tokens or num_tokens_cached
    // except to reset a preempted sequence's cache to 0.
    StepPlan schedule(const std::vector<SeqState*>& seqs, std::chrono::steady_clock::time_point now);

    // Returns a finished or cancelled sequence's blocks.
    void release(SeqState& seq);

private:
    void schedule_running(std::vector<SeqState*>& running, StepPlan& plan, int& budget);
    void admit_waiting(std::vector<SeqState*>& waiting, int num_running, StepPlan& plan, int& budget);
    // Frees KV by preempting the least urgent running sequence other than `keep` (its chunk, if
    // already planned, is dropped and its tokens return to `budget`); false if there is none.
    bool preempt_one(std::vector<SeqState*>& running, const SeqState* keep, StepPlan& plan, int& budget);
    double effective_priority(const SeqState& s, std::chrono::steady_clock::time_point now) const;

    SchedulerConfig config_;
    kv::BlockManager& blocks_;
    uint64_t next_admission_ = 0;
};

}  // namespace hichat::scheduler
