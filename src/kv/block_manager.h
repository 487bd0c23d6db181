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
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"

namespace hichat::kv {

// The blocks holding one sequence's KV, in position order: token p lives in
// blocks[p / block_size] at offset p % block_size.
struct BlockTable {
    std::vector<int32_t> blocks;  // [num_blocks] block ids
    int num_keyed = 0;            // leading blocks already offered to the cache (keyed, or a duplicate)
};

struct PrefixCacheCounters {
    int64_t evictions = 0;  // cached blocks whose key was dropped to make room
};

class BlockManager {
public:
    // prefix_caching false: no block is ever keyed; the manager is a plain allocator.
    BlockManager(int num_blocks, int block_size_tokens, bool prefix_caching = true);

    int block_size_tokens() const { return block_size_tokens_; }
    bool prefix_caching() const { return prefix_caching_; }
    int num_blocks_total() const { return static_cast<int>(blocks_.size()); }
    // Blocks no table holds (free or cached): what can be allocated now.
    int num_blocks_free() const { return queue_size_; }
    int num_blocks_used() const { return num_blocks_total() - num_blocks_free(); }
    // Blocks no table holds whose KV is still cached.
    int num_blocks_cached() const { return static_cast<int>(by_key_.size()) - num_keyed_in_use_; }
    const PrefixCacheCounters& counters() const { return counters_; }

    // Blocks a table needs to hold num_tokens.
    int num_blocks_for(int num_tokens) const { return (num_tokens + block_size_tokens_ - 1) / block_size_tokens_; }
    // Whether `table` can grow to hold num_tokens with the blocks free now.
    bool can_grow(const BlockTable& table, int num_tokens) const;
    // Grows `table` to hold num_tokens; false (table unchanged) if too few blocks are free.
    bool grow(BlockTable& table, int num_tokens);
    // Returns every block of `table`: reference counts drop, and blocks at zero go to the queue.
    void release(BlockTable& table);

    // The cached blocks holding the longest prefix of `keys` (the keys of a sequence's full blocks, in
    // order), at most max_blocks of them.
    std::vector<int32_t> find_cached_prefix(std::span<const BlockHash> keys, int max_blocks) const;
    // How many of `blocks` no table holds (taking them uses up free blocks).
    int num_unheld(std::span<const int32_t> blocks) const;
    // An empty table takes `blocks` (from find_cached_prefix) as its first blocks.
    void acquire_cached(BlockTable& table, std::span<const int32_t> blocks);
    // Keys the table's full blocks whose KV is computed: the first min(keys, num_computed_tokens /
    // block size) of them not keyed yet. A key already held by another block leaves this one unkeyed.
    void cache_full_blocks(BlockTable& table, std::span<const BlockHash> keys, int num_computed_tokens);
    // Whether tokens [begin, end) of `table` may be written: every block they touch is held by this
    // table alone and is not keyed.
    bool writable(const BlockTable& table, int begin_token, int end_token) const;

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
    void evict(int32_t b);

    int block_size_tokens_;
    bool prefix_caching_;
    std::vector<Block> blocks_;
    int32_t head_ = kNone, tail_ = kNone;  // the queue of blocks no table holds, oldest at head
    int queue_size_ = 0;
    std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_key_;
    int num_keyed_in_use_ = 0;  // keyed blocks some table holds
    PrefixCacheCounters counters_;
};

}  // namespace hichat::kv
