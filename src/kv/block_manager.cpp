#include "kv/block_manager.h"

#include <algorithm>

#include "base/check.h"

namespace hichat::kv {

BlockManager::BlockManager(int num_blocks, int block_size_tokens, bool prefix_caching, int num_host_slots)
    : block_size_tokens_(block_size_tokens),
      prefix_caching_(prefix_caching),
      blocks_(static_cast<size_t>(num_blocks)),
      host_(prefix_caching ? num_host_slots : 0) {
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
    while (static_cast<int>(table.blocks.size()) < num_blocks_for(num_tokens)) table.blocks.push_back(take_free_block());
    return true;
}

int32_t BlockManager::take_free_block() {
    const int32_t b = pop_front();
    if (blocks_[static_cast<size_t>(b)].keyed) evict(b);
    blocks_[static_cast<size_t>(b)].ref_count = 1;
    return b;
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

std::vector<PrefixBlock> BlockManager::find_cached_prefix(std::span<const BlockHash> keys, int max_blocks) const {
    std::vector<PrefixBlock> found;
    if (!prefix_caching_) return found;
    const size_t n = std::min(keys.size(), static_cast<size_t>(std::max(max_blocks, 0)));
    for (size_t i = 0; i < n; ++i) {
        if (auto it = by_key_.find(keys[i]); it != by_key_.end()) {
            found.push_back({.block = it->second});
        } else if (const int32_t slot = host_.find(keys[i]); slot != HostBlockCache::kNone) {
            found.push_back({.block = kNone, .host_slot = slot});
        } else {
            break;
        }
    }
    return found;
}

int BlockManager::num_free_blocks_taken(std::span<const PrefixBlock> prefix) const {
    int n = 0;
    for (const PrefixBlock& p : prefix) n += p.block == kNone || blocks_[static_cast<size_t>(p.block)].ref_count == 0;
    return n;
}

// Device blocks first, so that the blocks taken for host ones cannot be the prefix's own cached blocks;
// the host slots stay pinned until their copies are queued, so that no offload made meanwhile takes them.
void BlockManager::acquire_cached(BlockTable& table, std::span<const PrefixBlock> prefix,
                                  std::span<const BlockHash> keys) {
    CHECK(table.blocks.empty()) << "a cached prefix goes at the start of an empty table";
    CHECK_LE(prefix.size(), keys.size());
    table.blocks.assign(prefix.size(), kNone);
    for (size_t i = 0; i < prefix.size(); ++i) {
        const int32_t b = prefix[i].block;
        if (b == kNone) {
            host_.pin(prefix[i].host_slot);
            continue;
        }
        Block& block = blocks_[static_cast<size_t>(b)];
        CHECK(block.keyed) << "block " << b << " is not cached";
        if (block.ref_count++ == 0) {
            unlink(b);
            ++num_keyed_in_use_;
        }
        table.blocks[i] = b;
    }
    for (size_t i = 0; i < prefix.size(); ++i) {
        if (prefix[i].block != kNone) continue;
        const int32_t b = take_free_block();
        Block& block = blocks_[static_cast<size_t>(b)];
        CHECK(by_key_.try_emplace(keys[i], b).second) << "host block " << i << " is also on the device";
        block.keyed = true;
        block.key = keys[i];
        ++num_keyed_in_use_;
        copies_.push_back({.direction = BlockCopy::Direction::kToDevice, .device_block = b, .host_slot = prefix[i].host_slot});
        ++counters_.restored;
        host_.touch(prefix[i].host_slot);
        table.blocks[i] = b;
    }
    host_.unpin_all();
    table.num_keyed = static_cast<int>(prefix.size());
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

std::vector<BlockCopy> BlockManager::take_copies() {
    std::vector<BlockCopy> out;
    out.swap(copies_);
    return out;
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
    host_.check_invariants();
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
    if (host_.num_slots() > 0) {
        if (const int32_t slot = host_.find(block.key); slot != HostBlockCache::kNone) {
            host_.touch(slot);  // copied there before (this block came back from the host tier)
        } else if (const int32_t fresh = host_.insert(block.key); fresh != HostBlockCache::kNone) {
            copies_.push_back({.direction = BlockCopy::Direction::kToHost, .device_block = b, .host_slot = fresh});
            ++counters_.offloaded;
        }
    }
    by_key_.erase(block.key);
    block.keyed = false;
    ++counters_.evictions;
}

}  // namespace hichat::kv
