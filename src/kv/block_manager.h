// BlockManager: paged KV bookkeeping shared by both backends. Deals in block ids and reference counts;
// never touches KV memory (the backend's pool owns that). Engine thread only.
#pragma once

#include <cstdint>
#include <vector>

namespace hichat::kv {

struct BlockId {
    int32_t value = -1;
};

// The blocks holding one sequence's KV, in position order: token p lives in
// blocks[p / block_size] at offset p % block_size.
struct BlockTable {
    std::vector<int32_t> blocks;  // [num_blocks] block ids
};

class BlockManager {
public:
    BlockManager(int num_blocks, int block_size_tokens);

    int block_size_tokens() const { return block_size_tokens_; }
    int num_blocks_total() const { return static_cast<int>(ref_counts_.size()); }
    int num_blocks_free() const { return static_cast<int>(free_list_.size()); }
    int num_blocks_used() const { return num_blocks_total() - num_blocks_free(); }

    // Blocks a table needs to hold num_tokens.
    int num_blocks_for(int num_tokens) const { return (num_tokens + block_size_tokens_ - 1) / block_size_tokens_; }
    // Whether `table` can grow to hold num_tokens with the blocks free now.
    bool can_grow(const BlockTable& table, int num_tokens) const;
    // Grows `table` to hold num_tokens; false (table unchanged) if too few blocks are free.
    bool grow(BlockTable& table, int num_tokens);
    // Returns every block of `table` (reference counts drop; blocks at zero go back to the free list).
    void release(BlockTable& table);

private:
    int block_size_tokens_;
    std::vector<int32_t> ref_counts_;  // [num_blocks]
    std::vector<int32_t> free_list_;   // block ids, taken from the back
};

}  // namespace hichat::kv
