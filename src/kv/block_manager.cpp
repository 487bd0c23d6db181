#include "kv/block_manager.h"

#include "base/check.h"

namespace hichat::kv {

BlockManager::BlockManager(int num_blocks, int block_size_tokens)
    : block_size_tokens_(block_size_tokens), ref_counts_(static_cast<size_t>(num_blocks), 0) {
    CHECK_GT(block_size_tokens, 0);
    CHECK_GE(num_blocks, 0);
    free_list_.reserve(static_cast<size_t>(num_blocks));
    // Lowest ids handed out first.
    for (int b = num_blocks - 1; b >= 0; --b) free_list_.push_back(b);
}

bool BlockManager::can_grow(const BlockTable& table, int num_tokens) const {
    int needed = num_blocks_for(num_tokens) - static_cast<int>(table.blocks.size());
    return needed <= num_blocks_free();
}

bool BlockManager::grow(BlockTable& table, int num_tokens) {
    if (!can_grow(table, num_tokens)) return false;
    while (static_cast<int>(table.blocks.size()) < num_blocks_for(num_tokens)) {
        int32_t b = free_list_.back();
        free_list_.pop_back();
        CHECK_EQ(ref_counts_[static_cast<size_t>(b)], 0) << "block " << b;
        ref_counts_[static_cast<size_t>(b)] = 1;
        table.blocks.push_back(b);
    }
    return true;
}

void BlockManager::release(BlockTable& table) {
    for (int32_t b : table.blocks) {
        int32_t& rc = ref_counts_[static_cast<size_t>(b)];
        CHECK_GT(rc, 0) << "block " << b << " released twice";
        if (--rc == 0) free_list_.push_back(b);
    }
    table.blocks.clear();
}

}  // namespace hichat::kv
