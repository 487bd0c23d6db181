// SeqState: the part of a sequence that scheduling reads and changes. Engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kv/block_manager.h"

namespace hichat::scheduler {

enum class SeqStatus { kWaiting, kRunning, kFinished };

// The fair-share account of an owner name (an API key's id): a 64-bit hash, 0 for the empty name.
uint64_t owner_id(std::string_view name);

struct SeqState {
    uint64_t id = 0;
    int priority = 0;                                  // lower runs first
    uint64_t owner = 0;                                // fair-share account (owner_id() of the API key); 0: none
    std::chrono::steady_clock::time_point arrival;
    int num_tokens = 0;                                // prompt + generated so far
    int num_tokens_cached = 0;                         // tokens whose KV is in `blocks`
    kv::BlockTable blocks;
    SeqStatus status = SeqStatus::kWaiting;
    uint64_t admission_order = 0;                      // set when it starts running; later = newer
    // Prefix-cache keys of the sequence's full blocks of known tokens, in order (the engine appends
    // them as tokens become known; empty with the cache off).
    std::vector<kv::BlockHash> block_keys;
    int num_prefix_hit_tokens = -1;                    // tokens taken from the cache at first admission
    bool preempted = false;                            // lost its KV once (later lookups count apart)
};

}  // namespace hichat::scheduler
