// TurnStats: the multi-turn dataset's per-turn aggregates: TTFT (vLLM's numpy definitions, see
// latency_stats.h) and the cached prompt share of the successful requests of one turn index across
// all conversations. Turn t's prompt holds t earlier answers, so TTFT by turn shows whether the
// server recomputes the history (TTFT grows with t) or serves it from its prefix cache (flat).
#pragma once

#include <vector>

#include "bench/cached_prompt_share.h"
#include "bench/latency_stats.h"
#include "bench/request_outcome.h"

namespace hichat::tools::bench {

struct TurnStats {
    int turn = 0;           // 0-based turn index
    int num_completed = 0;  // successful requests of this turn
    int num_failed = 0;
    LatencyStats ttft;
    CachedPromptShare cache;
};

// `outcomes` [num_conversations * num_turns] conversation-major, as run_conversations() returns them:
// outcome i is turn i % num_turns. One entry per turn index, in order.
std::vector<TurnStats> stats_by_turn(const std::vector<RequestOutcome>& outcomes, int num_turns);

}  // namespace hichat::tools::bench
