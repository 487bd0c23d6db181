#include "kv/block_manager.h"

#include <algorithm>

#include "base/check.h"

namespace hichat::kv {

BlockManager::BlockManager(int num_blocks, int block_size_tokens, bool prefix_caching)
    : block_size_tokens_(block_size_tokens), prefix_caching_(prefix_caching), blocks_(static_cast<size_t>(num_blocks)) {
    CHECK_GT(block_size_tokens, 0);
    CHECK_GE(num_blocks, 0);
    for (int32_t b = 0; b < num_blocks; ++b) push_back(b);  // lowest ids handed out first
}

bool BlockManager::can_grow(const BlockTable& table, int num_tokens) const {
    int needed = num_blocks_for(num_tokens) - static_cast<int>(table.blocks.size());
    return needed <= num_blocks_free();
}

bool BlockManager::grow(BlockTable& table, int num_tokens) {
    if (!can_grow(table, num_tokens)) return false;
    while (static_cast<int>(table.blocks.size()) < num_blocks_for(num_tokens)) {
        const int32_t b = pop_front();
        if (blocks_[static_cast<size_t>(b)].keyed) evict(b);
        blocks_[static_cast<size_t>(b)].ref_count = 1;
        table.blocks.push_back(b);
    }
    return true;
}

void BlockManager::release(BlockTable& table) {
    for (auto it = table.blocks.rbegin(); it != table.blocks.rend(); ++it) {  // tail first
        Block& block = blocks_[static_cast<size_t>(*it)];
        CHECK_GT(block.ref_count, 0) << "block " << *it << " released twice";
        if (--block.ref_count > 0) continue;
        if (block.keyed) {
            --num_keyed_in_use_;
            push_back(*it);
        } else {
            push_front(*it);
        }
    }
    table.blocks.clear();
    table.num_keyed = 0;
}

std::vector<int32_t> BlockManager::find_cached_prefix(std::span<const BlockHash> keys, int max_blocks) const {
    std::vector<int32_t> found;
    if (!prefix_caching_) return found;
    const size_t n = std::min(keys.size(), static_cast<size_t>(std::max(max_blocks, 0)));
    for (size_t i = 0; i < n; ++i) {
        auto it = by_key_.find(keys[i]);
        if (it == by_key_.end()) break;
        found.push_back(it->second);
    }
    return found;
}

int BlockManager::num_unheld(std::span<const int32_t> blocks) const {
    int n = 0;
    for (int32_t b : blocks) n += blocks_[static_cast<size_t>(b)].ref_count == 0;
    return n;
}

void BlockManager::acquire_cached(BlockTable& table, std::span<const int32_t> blocks) {
    CHECK(table.blocks.empty()) << "a cached prefix goes at the start of an empty table";
    for (int32_t b : blocks) {
        Block& block = blocks_[static_cast<size_t>(b)];
        CHECK(block.keyed) << "block " << b << " is not cached";
        if (block.ref_count++ == 0) {
            unlink(b);
            ++num_keyed_in_use_;
        }
        table.blocks.push_back(b);
    }
    table.num_keyed = static_cast<int>(blocks.size());
}

void BlockManager::cache_full_blocks(BlockTable& table, std::span<const BlockHash> keys, int num_computed_tokens) {
    if (!prefix_caching_) return;
    const int num_full = std::min({static_cast<int>(keys.size()), num_computed_tokens / block_size_tokens_,
                                   static_cast<int>(table.blocks.size())});
    for (; table.num_keyed < num_full; ++table.num_keyed) {
        const auto i = static_cast<size_t>(table.num_keyed);
        const int32_t b = table.blocks[i];
        Block& block = blocks_[static_cast<size_t>(b)];
        if (block.keyed) continue;  // taken from the cache
        if (!by_key_.try_emplace(keys[i], b).second) continue;  // a duplicate computed alongside: stays private
        block.keyed = true;
        block.key = keys[i];
        ++num_keyed_in_use_;
    }
}

bool BlockManager::writable(const BlockTable& table, int begin_token, int end_token) const {
    if (end_token <= begin_token) return true;
    const int first = begin_token / block_size_tokens_, last = (end_token - 1) / block_size_tokens_;
    if (last >= static_cast<int>(table.blocks.size())) return false;
    for (int i = first; i <= last; ++i) {
        const Block& block = blocks_[static_cast<size_t>(table.blocks[static_cast<size_t>(i)])];
        if (block.ref_count != 1 || block.keyed) return false;
    }
    return true;
}

void BlockManager::check_invariants() const {
    int in_queue = 0, keyed_in_queue = 0, keyed_in_use = 0;
    for (int32_t b = head_, prev = kNone; b != kNone; prev = b, b = blocks_[static_cast<size_t>(b)].next) {
        const Block& block = blocks_[static_cast<size_t>(b)];
        CHECK_EQ(block.ref_count, 0) << "block " << b << " is queued while held";
        CHECK_EQ(block.prev, prev) << "block " << b << ": broken queue link";
        ++in_queue;
        keyed_in_queue += block.keyed;
        CHECK_LE(in_queue, num_blocks_total()) << "the queue has a cycle";
    }
    int held = 0;
    for (size_t b = 0; b < blocks_.size(); ++b) {
        const Block& block = blocks_[b];
        CHECK_GE(block.ref_count, 0) << "block " << b;
        held += block.ref_count > 0;
        keyed_in_use += block.ref_count > 0 && block.keyed;
        if (block.keyed) {
            auto it = by_key_.find(block.key);
            CHECK(it != by_key_.end() && it->second == static_cast<int32_t>(b)) << "block " << b << ": key not mapped";
        }
    }
    CHECK_EQ(in_queue, queue_size_);
    CHECK_EQ(held + in_queue, num_blocks_total()) << "a block is neither held nor queued";
    CHECK_EQ(keyed_in_use, num_keyed_in_use_);
    CHECK_EQ(static_cast<int>(by_key_.size()), keyed_in_use + keyed_in_queue) << "a key maps to no keyed block";
    CHECK_EQ(num_blocks_used() + num_blocks_cached() + (queue_size_ - keyed_in_queue), num_blocks_total());
}

int32_t BlockManager::pop_front() {
    const int32_t b = head_;
    CHECK_NE(b, kNone) << "no free block";
    unlink(b);
    return b;
}

void BlockManager::push_front(int32_t b) {
    Block& block = blocks_[static_cast<size_t>(b)];
    block.prev = kNone;
    block.next = head_;
    if (head_ != kNone) blocks_[static_cast<size_t>(head_)].prev = b;
    head_ = b;
    if (tail_ == kNone) tail_ = b;
    ++queue_size_;
}

void BlockManager::push_back(int32_t b) {
    Block& block = blocks_[static_cast<size_t>(b)];
    block.next = kNone;
    block.prev = tail_;
    if (tail_ != kNone) blocks_[static_cast<size_t>(tail_)].next = b;
    tail_ = b;
    if (head_ == kNone) head_ = b;
    ++queue_size_;
}

void BlockManager::unlink(int32_t b) {
    Block& block = blocks_[static_cast<size_t>(b)];
    if (block.prev != kNone) blocks_[static_cast<size_t>(block.prev)].next = block.next;
    else head_ = block.next;
    if (block.next != kNone) blocks_[static_cast<size_t>(block.next)].prev = block.prev;
    else tail_ = block.prev;
    block.prev = block.next = kNone;
    --queue_size_;
}

void BlockManager::evict(int32_t b) {
    Block& block = blocks_[static_cast<size_t>(b)];
    by_key_.erase(block.key);
    block.keyed = false;
    ++counters_.evictions;
}

}  // namespace hichat::kv
