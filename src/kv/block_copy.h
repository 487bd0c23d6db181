// BlockCopy: one KV block moved between the device pool and the host-memory tier, decided by
// BlockManager (bookkeeping) and carried out by the runner (which owns both memories). A step's copies
// run in the order given, after every earlier step's work and before the step that follows them.
#pragma once

#include <cstdint>

namespace hichat::kv {

struct BlockCopy {
    enum class Direction : uint8_t { kToHost, kToDevice };
    Direction direction = Direction::kToHost;
    int32_t device_block = 0;
    int32_t host_slot = 0;
};

}  // namespace hichat::kv
