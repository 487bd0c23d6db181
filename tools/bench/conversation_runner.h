// run_conversations(): the multi-turn counterpart of run_load(). Each conversation is a chain of
// requests: turn t+1 is built (from the outcomes of turns 0..t) only once turn t's answer has fully
// arrived, so its prompt can carry that answer. Conversations run concurrently, at most
// max_concurrency at once: one lane (coroutine, connection) per slot takes the next conversation
// whose arrival time has come and runs all its turns, then the next. All on the calling thread.
#pragma once

#include <functional>
#include <vector>

#include "base/status.h"
#include "bench/load_generator.h"
#include "bench/request_outcome.h"

namespace hichat::tools::bench {

// The request for turn `turn` of conversation `conversation`; `earlier` [turn] are the outcomes of
// its turns 0..turn-1, all successful. Called on the run's thread, turns of one conversation in order.
using TurnRequestFn =
    std::function<LoadRequest(int conversation, int turn, const std::vector<RequestOutcome>& earlier)>;

struct ConversationLoad {
    int num_conversations = 0;
    int num_turns = 0;
    std::vector<double> arrivals_s;  // [num_conversations] when each conversation's first turn may start
};

// Outcomes come back conversation-major: outcomes[c * num_turns + t]. When a turn fails its
// conversation stops; its later turns are failed outcomes ("an earlier turn of the conversation
// failed") and are never sent. Errors: the host cannot be resolved, or the arrivals do not match.
Result<LoadResult> run_conversations(const LoadConfig& config, const ConversationLoad& load,
                                     const TurnRequestFn& next_request);

}  // namespace hichat::tools::bench
