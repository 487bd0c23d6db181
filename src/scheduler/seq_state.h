// SeqState: the part of a sequence that scheduling reads and changes. Engine thread only.
#pragma once

#include <chrono>
#include <cstdint>

#include "kv/block_manager.h"

namespace hichat::scheduler {

enum class SeqStatus { kWaiting, kRunning, kFinished };

struct SeqState {
    uint64_t id = 0;
    int priority = 0;                                  // lower runs first
    std::chrono::steady_clock::time_point arrival;
    int num_tokens = 0;                                // prompt + generated so far
    int num_tokens_cached = 0;                         // tokens whose KV is in `blocks`
    kv::BlockTable blocks;
    SeqStatus status = SeqStatus::kWaiting;
    uint64_t admission_order = 0;                      // set when it starts running; later = newer
};

}  // namespace hichat::scheduler
