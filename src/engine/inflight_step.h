// InflightStep: the pipelined engine's record of a step submitted to the runner whose ids have not
// been collected yet: which sequence each sampled logit row belongs to and where its placeholder sits.
// Engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "scheduler/step_cost_model.h"

namespace hichat::engine {

struct InflightStep {
    struct SampledRow {
        uint64_t seq_id = 0;   // looked up at collect; a sequence gone or finished by then is skipped
        int32_t row = 0;       // logit row in the step; its placeholder is -(row + 1)
        int token_index = 0;   // the placeholder's index in Sequence::tokens
    };
    int64_t step_no = 0;              // submission order, from 0
    std::vector<SampledRow> rows;     // [sampling chunks] in row order
    scheduler::StepFeatures features; // of its plan, for the cost model
    double itl_target_ms = 0;         // the plan's
    std::chrono::steady_clock::time_point submitted;
};

}  // namespace hichat::engine
