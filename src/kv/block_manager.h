// BlockManager: paged KV bookkeeping shared by both backends, with the prefix cache. Deals in block ids,
// reference counts and block keys; never touches KV memory (the backend's pool owns that). Engine
// thread only.
//
// Every block is in one of three states: in use (held by at least one table), cached (held by no
// table, its KV still valid under its key) or free (no table, no key). Free and cached blocks wait in
// one queue, oldest first: a new block comes from the front, and a cached block taken from there is
// evicted (its key forgotten). A released table puts its cached blocks at the back tail first (a
// prompt's shared head outlives its private tail) and its unkeyed blocks at the front (reused before
// any cached KV is lost). A full block is keyed once its KV is computed (`cache_full_blocks`); a new
// sequence takes the longest keyed prefix (`find_cached_prefix`, `acquire_cached`) and computes the
// rest. A keyed block is full, so no table writes into it again.
//
// With a host tier (num_host_slots > 0), an evicted block is first copied to a host slot (unless the
// tier already holds its key), and a prefix lookup continues in the host tier where the device cache
// ends: those blocks get fresh device blocks, keyed at once, and are copied back. The copies wait in
// take_copies() for the runner, which must run them before the next step.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_copy.h"
#include "kv/block_hash.h"
#include "kv/host_block_cache.h"

namespace hichat::kv {

// The blocks holding one sequence's KV, in position order: token p lives in
// blocks[p / block_size] at offset p % block_size.
struct BlockTable {
    std::vector<int32_t> blocks;  // [num_blocks] block ids
    int num_keyed = 0;            // leading blocks already offered to the cache (keyed, or a duplicate)
};

struct PrefixCacheCounters {
    int64_t evictions = 0;        // cached device blocks whose key was dropped to make room
    int64_t offloaded = 0;        // device blocks copied to the host tier on eviction
    int64_t restored = 0;         // host-tier blocks copied back into device blocks
};

// One block of a cached prefix: a device block, or (block == kNone) a host-tier slot.
struct PrefixBlock {
    int32_t block = -1;
    int32_t host_slot = -1;
};

class BlockManager {
public:
    // prefix_caching false: no block is ever keyed; the manager is a plain allocator (and the host tier
    // unused). num_host_slots: blocks the runner's host tier holds (0: none).
    BlockManager(int num_blocks, int block_size_tokens, bool prefix_caching = true, int num_host_slots = 0);

    int block_size_tokens() const { return block_size_tokens_; }
    bool prefix_caching() const { return prefix_caching_; }
    int num_blocks_total() const { return static_cast<int>(blocks_.size()); }
    // Blocks no table holds (free or cached): what can be allocated now.
    int num_blocks_free() const { return queue_size_; }
    int num_blocks_used() const { return num_blocks_total() - num_blocks_free(); }
    // Blocks no table holds whose KV is still cached.
    int num_blocks_cached() const { return static_cast<int>(by_key_.size()) - num_keyed_in_use_; }
    const PrefixCacheCounters& counters() const { return counters_; }
    const HostBlockCache& host_tier() const { return host_; }

    // Blocks a table needs to hold num_tokens.
    int num_blocks_for(int num_tokens) const { return (num_tokens + block_size_tokens_ - 1) / block_size_tokens_; }
    // Whether `table` can grow to hold num_tokens with the blocks free now.
    bool can_grow(const BlockTable& table, int num_tokens) const;
    // Grows `table` to hold num_tokens; false (table unchanged) if too few blocks are free.
    bool grow(BlockTable& table, int num_tokens);
    // Returns every block of `table`: reference counts drop, and blocks at zero go to the queue.
    void release(BlockTable& table);

    // Where the longest cached prefix of `keys` (the keys of a sequence's full blocks, in order) is, at
    // most max_blocks of them: each block from the device cache, else from the host tier.
    std::vector<PrefixBlock> find_cached_prefix(std::span<const BlockHash> keys, int max_blocks) const;
    // Free blocks that taking `prefix` uses up: its device blocks no table holds, and one per host block.
    int num_free_blocks_taken(std::span<const PrefixBlock> prefix) const;
    // An empty table takes `prefix` (from find_cached_prefix of the same `keys`, nothing changed since)
    // as its first blocks; host blocks get device blocks and copies back.
    void acquire_cached(BlockTable& table, std::span<const PrefixBlock> prefix, std::span<const BlockHash> keys);
    // Keys the table's full blocks whose KV is computed: the first min(keys, num_computed_tokens /
    // block size) of them not keyed yet. A key already held by another block leaves this one unkeyed.
    void cache_full_blocks(BlockTable& table, std::span<const BlockHash> keys, int num_computed_tokens);
    // Whether tokens [begin, end) of `table` may be written: every block they touch is held by this
    // table alone and is not keyed.
    bool writable(const BlockTable& table, int begin_token, int end_token) const;
    // The copies decided since the last call, in the order they must run.
    std::vector<BlockCopy> take_copies();

    // Pool accounting (tests): used + cached + free == total, the queue and the key map agree with the
    // reference counts; dies with a message otherwise.
    void check_invariants() const;

private:
    static constexpr int32_t kNone = -1;
    struct Block {
        int32_t ref_count = 0;
        bool keyed = false;
        BlockHash key;
        int32_t prev = kNone, next = kNone;  // queue links while ref_count == 0
    };

    int32_t pop_front();
    void push_front(int32_t b);
    void push_back(int32_t b);
    void unlink(int32_t b);
    // Drops a cached block's key, first copying it to the host tier if there is one.
    void evict(int32_t b);
    // A block from the front of the queue (evicted if cached), held once.
    int32_t take_free_block();

    int block_size_tokens_;
    bool prefix_caching_;
    std::vector<Block> blocks_;
    int32_t head_ = kNone, tail_ = kNone;  // the queue of blocks no table holds, oldest at head
    int queue_size_ = 0;
    std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_key_;
    int num_keyed_in_use_ = 0;  // keyed blocks some table holds
    PrefixCacheCounters counters_;
    HostBlockCache host_;
    std::vector<BlockCopy> copies_;  // decided, not taken yet
};

}  // namespace hichat::kv
