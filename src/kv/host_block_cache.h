// HostBlockCache: bookkeeping of the host-memory KV tier. Each of its slots holds a copy of one evicted
// device block under that block's key; slots are reused least recently used first. Never touches
// memory (the runner owns the pinned pool); BlockManager decides what moves. Engine thread only.
//
// A pinned slot is never chosen by insert(): BlockManager pins the slots it is about to copy back so
// that offloads made in the same admission cannot overwrite them first.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"

namespace hichat::kv {

class HostBlockCache {
public:
    static constexpr int32_t kNone = -1;

    explicit HostBlockCache(int num_slots);

    int num_slots() const { return static_cast<int>(slots_.size()); }
    int num_used() const { return static_cast<int>(by_key_.size()); }  // slots holding a key
    int64_t num_dropped() const { return num_dropped_; }               // keys overwritten by insert()

    // The slot holding `key`, or kNone.
    int32_t find(const BlockHash& key) const;
    // Marks `slot` most recently used.
    void touch(int32_t slot);
    // A slot for `key` (not in the cache): an empty slot, else the least recently used unpinned one,
    // whose key is dropped; kNone if every slot is pinned. The slot becomes most recently used.
    int32_t insert(const BlockHash& key);
    void pin(int32_t slot);
    void unpin_all();

    // Dies with a message if the map, the slots and the LRU list disagree (tests).
    void check_invariants() const;

private:
    struct Slot {
        bool keyed = false, pinned = false;
        BlockHash key;
        int32_t prev = kNone, next = kNone;  // LRU list, least recent at head
    };
    void unlink(int32_t s);
    void push_back(int32_t s);

    std::vector<Slot> slots_;
    int32_t head_ = kNone, tail_ = kNone;
    std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_key_;
    std::vector<int32_t> pinned_;
    int64_t num_dropped_ = 0;
};

}  // namespace hichat::kv
