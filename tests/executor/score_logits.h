// Test helper of the quantized golden tests: every position's logits of one sequence, in one step.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/cpu_runner.h"
#include "executor/model_runner.h"

namespace hichat::testing {

inline std::vector<float> score(executor::ModelRunner& runner, const std::vector<int32_t>& ids) {
    const auto table = executor::identity_block_table(static_cast<int>(ids.size()), runner.kv_block_size_tokens());
    executor::ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = ids, .all_logits = true});
    std::vector<float> logits;
    runner.forward(batch, logits);
    return logits;
}

}  // namespace hichat::testing
