// StepPlan: which sequences run in the next forward pass and how many of their tokens.
#pragma once

#include <vector>

#include "kv/block_copy.h"
#include "scheduler/seq_state.h"

namespace hichat::scheduler {

struct ScheduledChunk {
    SeqState* seq = nullptr;
    int num_tokens = 0;  // tokens [seq->num_tokens_cached, + num_tokens) are computed this step
    // True when this chunk reaches the sequence's last token: its logits give the next token.
    bool samples() const { return seq->num_tokens_cached + num_tokens == seq->num_tokens; }
};

struct StepPlan {
    std::vector<ScheduledChunk> chunks;   // decodes first, then prefill chunks
    std::vector<SeqState*> preempted;     // moved back to waiting this step; their KV was freed
    // KV blocks to move between the device pool and the host tier before this step runs (also when the
    // plan has no chunk left: a copy back may serve a sequence preempted after its admission).
    std::vector<kv::BlockCopy> copies;
    double itl_target_ms = 0;   // the strictest ITL target of the sequences it decodes; 0: none

    bool empty() const { return chunks.empty(); }
    int num_tokens() const {
        int n = 0;
        for (const auto& c : chunks) n += c.num_tokens;
        return n;
    }
};

}  // namespace hichat::scheduler
