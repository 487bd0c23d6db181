#include "kv/block_manager.h"

#include <gtest/gtest.h>

#include <set>

namespace hichat::kv {
namespace {

TEST(BlockManager, GrowsByWholeBlocksAndReleasesAll) {
    BlockManager m(10, 16);
    BlockTable t;
    EXPECT_TRUE(m.grow(t, 1));
    EXPECT_EQ(t.blocks.size(), 1u);
    EXPECT_TRUE(m.grow(t, 16));
    EXPECT_EQ(t.blocks.size(), 1u);
    EXPECT_TRUE(m.grow(t, 17));
    EXPECT_EQ(t.blocks.size(), 2u);
    EXPECT_EQ(m.num_blocks_used(), 2);
    m.release(t);
    EXPECT_TRUE(t.blocks.empty());
    EXPECT_EQ(m.num_blocks_free(), 10);
}

TEST(BlockManager, RefusesWhenFullAndLeavesTheTableUnchanged) {
    BlockManager m(3, 4);
    BlockTable a, b;
    EXPECT_TRUE(m.grow(a, 8));
    EXPECT_FALSE(m.can_grow(b, 8));
    EXPECT_FALSE(m.grow(b, 8));
    EXPECT_TRUE(b.blocks.empty());
    EXPECT_TRUE(m.grow(b, 4));
    EXPECT_EQ(m.num_blocks_free(), 0);
    std::set<int32_t> ids(a.blocks.begin(), a.blocks.end());
    ids.insert(b.blocks.begin(), b.blocks.end());
    EXPECT_EQ(ids.size(), 3u) << "no block is handed out twice";
    m.release(a);
    EXPECT_TRUE(m.grow(b, 12));
}

}  // namespace
}  // namespace hichat::kv

namespace hichat::kv {
namespace {

// Keys of `num_blocks` full blocks of 4 tokens: tokens first, first + 1, ...
std::vector<BlockHash> chain_keys(std::string_view salt, int first, int num_blocks) {
    std::vector<BlockHash> keys;
    BlockHash parent = root_block_hash(salt);
    for (int i = 0; i < num_blocks; ++i) {
        std::vector<int32_t> tokens;
        for (int j = 0; j < 4; ++j) tokens.push_back(first + 4 * i + j);
        parent = chain_block_hash(parent, tokens);
        keys.push_back(parent);
    }
    return keys;
}

// The device blocks of a prefix (-1 where a block is only in the host tier).
std::vector<int32_t> device_blocks(const std::vector<PrefixBlock>& prefix) {
    std::vector<int32_t> out;
    for (const PrefixBlock& p : prefix) out.push_back(p.block);
    return out;
}

TEST(BlockHash, ChainDependsOnEveryEarlierBlockAndTheSalt) {
    auto a = chain_keys("", 0, 3), b = chain_keys("", 0, 3);
    EXPECT_EQ(a, b) << "the same tokens give the same keys";
    auto other_salt = chain_keys("key-1", 0, 3);
    for (int i = 0; i < 3; ++i) EXPECT_NE(a[static_cast<size_t>(i)], other_salt[static_cast<size_t>(i)]);
    // Block 1 holds the same tokens 4..7 in both, but block 0 differs: its key differs too.
    BlockHash root = root_block_hash("");
    BlockHash x0 = chain_block_hash(root, std::vector<int32_t>{0, 1, 2, 3});
    BlockHash y0 = chain_block_hash(root, std::vector<int32_t>{0, 1, 2, 9});
    std::vector<int32_t> same{4, 5, 6, 7};
    EXPECT_NE(chain_block_hash(x0, same), chain_block_hash(y0, same));
    // Salts are length-prefixed: "ab" + tokens never meets "a" + ...
    EXPECT_NE(root_block_hash("ab"), root_block_hash("a"));
}

TEST(PrefixCache, FinishedTableLeavesItsFullBlocksCachedForTheNext) {
    BlockManager m(8, 4);
    auto keys = chain_keys("", 0, 3);
    BlockTable a;
    ASSERT_TRUE(m.grow(a, 14));  // 3 full blocks + 2 tokens
    m.cache_full_blocks(a, keys, 14);
    EXPECT_EQ(a.num_keyed, 3);
    const std::vector<int32_t> a_blocks = a.blocks;
    m.release(a);
    m.check_invariants();
    EXPECT_EQ(m.num_blocks_cached(), 3);
    EXPECT_EQ(m.num_blocks_free(), 8) << "cached blocks can still be allocated";

    std::vector<PrefixBlock> hit = m.find_cached_prefix(keys, 3);
    ASSERT_EQ(hit.size(), 3u);
    EXPECT_EQ(device_blocks(hit), std::vector<int32_t>(a_blocks.begin(), a_blocks.begin() + 3));
    EXPECT_EQ(m.find_cached_prefix(keys, 2).size(), 2u) << "capped";
    EXPECT_EQ(m.num_free_blocks_taken(hit), 3);
    BlockTable b;
    m.acquire_cached(b, hit, keys);
    EXPECT_EQ(m.num_blocks_cached(), 0);
    EXPECT_EQ(m.num_blocks_used(), 3);
    ASSERT_TRUE(m.grow(b, 14));
    EXPECT_FALSE(m.writable(b, 8, 12)) << "a cached block is never written";
    EXPECT_TRUE(m.writable(b, 12, 14));
    m.check_invariants();
}

TEST(PrefixCache, SharedBlocksAreCountedOnceAndNeverWritable) {
    BlockManager m(8, 4);
    auto keys = chain_keys("", 0, 2);
    BlockTable a;
    ASSERT_TRUE(m.grow(a, 10));
    m.cache_full_blocks(a, keys, 10);
    BlockTable b;
    std::vector<PrefixBlock> hit = m.find_cached_prefix(keys, 2);
    EXPECT_EQ(m.num_free_blocks_taken(hit), 0) << "held by a: taking them costs no free block";
    m.acquire_cached(b, hit, keys);
    EXPECT_EQ(m.num_blocks_used(), 3);
    EXPECT_FALSE(m.writable(b, 0, 8));
    m.release(a);
    m.check_invariants();
    EXPECT_EQ(m.num_blocks_used(), 2) << "b still holds the shared blocks";
    m.release(b);
    m.check_invariants();
    EXPECT_EQ(m.num_blocks_cached(), 2);
}

TEST(PrefixCache, UnkeyedBlocksAreReusedBeforeCachedOnesAndTailsAreEvictedFirst) {
    BlockManager m(4, 4);
    auto keys = chain_keys("", 0, 2);
    BlockTable a;
    ASSERT_TRUE(m.grow(a, 8));
    m.cache_full_blocks(a, keys, 8);
    BlockTable scratch;
    ASSERT_TRUE(m.grow(scratch, 8));  // the two other blocks, unkeyed
    m.release(scratch);
    m.release(a);
    BlockTable c;
    ASSERT_TRUE(m.grow(c, 8));
    EXPECT_EQ(m.counters().evictions, 0) << "the unkeyed blocks went first";
    EXPECT_EQ(m.find_cached_prefix(keys, 2).size(), 2u);
    ASSERT_TRUE(m.grow(c, 12));
    EXPECT_EQ(m.counters().evictions, 1);
    EXPECT_EQ(m.find_cached_prefix(keys, 2).size(), 1u) << "the tail block was evicted, the head kept";
    m.check_invariants();
    ASSERT_TRUE(m.grow(c, 16));
    EXPECT_TRUE(m.find_cached_prefix(keys, 2).empty());
    EXPECT_EQ(m.counters().evictions, 2);
    m.release(c);
    m.check_invariants();
}

TEST(PrefixCache, LeastRecentlyReleasedPrefixIsEvictedFirst) {
    BlockManager m(4, 4);
    auto old_keys = chain_keys("", 0, 2), new_keys = chain_keys("", 100, 2);
    BlockTable a, b;
    ASSERT_TRUE(m.grow(a, 8));
    m.cache_full_blocks(a, old_keys, 8);
    ASSERT_TRUE(m.grow(b, 8));
    m.cache_full_blocks(b, new_keys, 8);
    m.release(a);
    m.release(b);
    BlockTable c;
    ASSERT_TRUE(m.grow(c, 8));
    EXPECT_TRUE(m.find_cached_prefix(old_keys, 2).empty());
    EXPECT_EQ(m.find_cached_prefix(new_keys, 2).size(), 2u);
    m.release(c);
    m.check_invariants();
}

TEST(PrefixCache, DuplicateComputedAlongsideStaysPrivate) {
    BlockManager m(8, 4);
    auto keys = chain_keys("", 0, 2);
    BlockTable a, b;
    ASSERT_TRUE(m.grow(a, 8));
    ASSERT_TRUE(m.grow(b, 8));
    m.cache_full_blocks(a, keys, 8);
    m.cache_full_blocks(b, keys, 8);
    EXPECT_EQ(device_blocks(m.find_cached_prefix(keys, 2)), std::vector<int32_t>(a.blocks.begin(), a.blocks.end()));
    m.release(b);
    EXPECT_EQ(m.num_blocks_cached(), 0) << "b's copies were never keyed";
    m.release(a);
    EXPECT_EQ(m.num_blocks_cached(), 2);
    m.check_invariants();
}

TEST(PrefixCache, OnlyComputedFullBlocksAreKeyed) {
    BlockManager m(8, 4);
    auto keys = chain_keys("", 0, 3);
    BlockTable a;
    ASSERT_TRUE(m.grow(a, 12));
    m.cache_full_blocks(a, keys, 7);
    EXPECT_EQ(a.num_keyed, 1) << "block 1 is not computed to its end";
    m.cache_full_blocks(a, std::span(keys).first(1), 12);
    EXPECT_EQ(a.num_keyed, 1) << "block 1's tokens are not known yet";
    m.cache_full_blocks(a, keys, 12);
    EXPECT_EQ(a.num_keyed, 3);
    m.check_invariants();
}

TEST(PrefixCache, OtherSaltNeverHits) {
    BlockManager m(8, 4);
    auto keys = chain_keys("key-a", 0, 2);
    BlockTable a;
    ASSERT_TRUE(m.grow(a, 8));
    m.cache_full_blocks(a, keys, 8);
    m.release(a);
    EXPECT_TRUE(m.find_cached_prefix(chain_keys("key-b", 0, 2), 2).empty());
    EXPECT_EQ(m.find_cached_prefix(chain_keys("key-a", 0, 2), 2).size(), 2u);
}

TEST(PrefixCache, DisabledNeverKeys) {
    BlockManager m(8, 4, /*prefix_caching=*/false);
    auto keys = chain_keys("", 0, 2);
    BlockTable a;
    ASSERT_TRUE(m.grow(a, 8));
    m.cache_full_blocks(a, keys, 8);
    m.release(a);
    EXPECT_EQ(m.num_blocks_cached(), 0);
    EXPECT_TRUE(m.find_cached_prefix(keys, 2).empty());
    m.check_invariants();
}

// Caches `keys` (blocks of 4 tokens) through a table that is then released.
void cache_prefix(BlockManager& m, const std::vector<BlockHash>& keys) {
    BlockTable t;
    const int n = static_cast<int>(keys.size()) * 4;
    ASSERT_TRUE(m.grow(t, n));
    m.cache_full_blocks(t, keys, n);
    m.release(t);
}

TEST(HostTier, EvictedBlocksAreCopiedOutAndComeBackOnAHit) {
    BlockManager m(4, 4, true, /*num_host_slots=*/4);
    const auto a = chain_keys("", 0, 2), b = chain_keys("", 100, 4);
    cache_prefix(m, a);
    EXPECT_TRUE(m.take_copies().empty()) << "nothing is copied before an eviction";
    cache_prefix(m, b);  // takes all 4 blocks: a's two are evicted to the host tier
    const std::vector<BlockCopy> out = m.take_copies();
    ASSERT_EQ(out.size(), 2u);
    for (const BlockCopy& c : out) EXPECT_EQ(c.direction, BlockCopy::Direction::kToHost);
    EXPECT_EQ(m.counters().offloaded, 2);
    EXPECT_EQ(m.host_tier().num_used(), 2);
    m.check_invariants();

    const std::vector<PrefixBlock> hit = m.find_cached_prefix(a, 2);
    ASSERT_EQ(hit.size(), 2u);
    for (const PrefixBlock& p : hit) EXPECT_EQ(p.block, -1) << "only in the host tier";
    EXPECT_EQ(m.num_free_blocks_taken(hit), 2);
    BlockTable t;
    m.acquire_cached(t, hit, a);
    ASSERT_EQ(t.blocks.size(), 2u);
    EXPECT_EQ(t.num_keyed, 2);
    const std::vector<BlockCopy> moves = m.take_copies();
    // Two of b's blocks were evicted to make room (copied out first), then a's come back into them.
    ASSERT_EQ(moves.size(), 4u);
    std::vector<int32_t> restored_into;
    for (size_t i = 0; i < moves.size(); ++i) {
        if (moves[i].direction == BlockCopy::Direction::kToDevice) {
            restored_into.push_back(moves[i].device_block);
            EXPECT_EQ(moves[i].host_slot, hit[restored_into.size() - 1].host_slot);
            bool saved_first = false;
            for (size_t j = 0; j < i; ++j) {
                saved_first |= moves[j].direction == BlockCopy::Direction::kToHost &&
                               moves[j].device_block == moves[i].device_block;
            }
            EXPECT_TRUE(saved_first) << "device block " << moves[i].device_block << " is overwritten before it is saved";
        }
    }
    EXPECT_EQ(restored_into, t.blocks);
    EXPECT_EQ(m.counters().restored, 2);
    EXPECT_EQ(device_blocks(m.find_cached_prefix(a, 2)), t.blocks) << "restored blocks are keyed on the device at once";
    EXPECT_FALSE(m.writable(t, 0, 8));
    m.release(t);
    m.check_invariants();
}

TEST(HostTier, ABlockAlreadyInTheHostTierIsNotCopiedAgain) {
    BlockManager m(2, 4, true, /*num_host_slots=*/4);
    const auto a = chain_keys("", 0, 2), b = chain_keys("", 100, 2);
    cache_prefix(m, a);
    cache_prefix(m, b);  // a -> host
    EXPECT_EQ(m.take_copies().size(), 2u);
    BlockTable t;
    m.acquire_cached(t, m.find_cached_prefix(a, 2), a);  // b -> host, a -> device
    m.release(t);
    EXPECT_EQ(m.take_copies().size(), 4u);
    cache_prefix(m, b);  // b comes from nowhere new: a is evicted again, but the host tier has it
    const std::vector<BlockCopy> again = m.take_copies();
    EXPECT_TRUE(again.empty()) << again.size() << " copies";
    EXPECT_EQ(m.counters().offloaded, 4);
    m.check_invariants();
}

TEST(HostTier, LookupContinuesInTheHostTierWhereTheDeviceEnds) {
    BlockManager m(4, 4, true, /*num_host_slots=*/8);
    const auto a = chain_keys("", 0, 3);
    cache_prefix(m, a);
    BlockTable other;
    ASSERT_TRUE(m.grow(other, 12));  // the free block, then a's tail first: blocks 2 and 1 leave the device
    m.take_copies();
    const std::vector<PrefixBlock> hit = m.find_cached_prefix(a, 3);
    ASSERT_EQ(hit.size(), 3u);
    EXPECT_GE(hit[0].block, 0) << "block 0 stayed on the device";
    EXPECT_EQ(hit[1].block, -1);
    EXPECT_EQ(hit[2].block, -1);
    EXPECT_EQ(m.num_free_blocks_taken(hit), 3);
    EXPECT_EQ(m.num_blocks_free(), 1) << "not enough room for three: the scheduler would not take it";
    m.release(other);
    BlockTable t;
    m.acquire_cached(t, hit, a);
    EXPECT_EQ(t.blocks[0], hit[0].block);
    EXPECT_EQ(m.counters().restored, 2);
    m.release(t);
    m.check_invariants();
}

TEST(HostTier, OldestHostCopiesAreDroppedAndSlotsBeingRestoredAreNeverReused) {
    BlockManager m(2, 4, true, /*num_host_slots=*/2);
    const auto a = chain_keys("", 0, 2), b = chain_keys("", 100, 2), c = chain_keys("", 200, 2);
    cache_prefix(m, a);
    cache_prefix(m, b);  // a -> host (both slots)
    m.take_copies();
    // Restoring a evicts b's two blocks; the host tier is full of a, whose slots are being read: b is
    // dropped, not written over them.
    BlockTable t;
    m.acquire_cached(t, m.find_cached_prefix(a, 2), a);
    for (const BlockCopy& copy : m.take_copies()) EXPECT_EQ(copy.direction, BlockCopy::Direction::kToDevice);
    EXPECT_TRUE(m.find_cached_prefix(b, 2).empty()) << "b had nowhere to go";
    m.release(t);
    cache_prefix(m, c);  // a is evicted again, its host copies are still there
    EXPECT_TRUE(m.take_copies().empty());
    EXPECT_EQ(m.find_cached_prefix(a, 2).size(), 2u);
    EXPECT_EQ(m.host_tier().num_dropped(), 0);
    m.check_invariants();
}

TEST(HostTier, OffWithoutThePrefixCache) {
    BlockManager m(2, 4, /*prefix_caching=*/false, /*num_host_slots=*/4);
    EXPECT_EQ(m.host_tier().num_slots(), 0);
    cache_prefix(m, chain_keys("", 0, 2));
    cache_prefix(m, chain_keys("", 100, 2));
    EXPECT_TRUE(m.take_copies().empty());
}

TEST(HostBlockCache, InsertsTakeEmptySlotsThenTheLeastRecentlyUsed) {
    HostBlockCache h(2);
    const auto k = chain_keys("", 0, 3);
    const int32_t s0 = h.insert(k[0]), s1 = h.insert(k[1]);
    EXPECT_NE(s0, s1);
    h.touch(s0);
    EXPECT_EQ(h.insert(k[2]), s1) << "k[1] was used least recently";
    EXPECT_EQ(h.find(k[1]), HostBlockCache::kNone);
    EXPECT_EQ(h.find(k[2]), s1);
    EXPECT_EQ(h.num_dropped(), 1);
    h.pin(s0);
    h.pin(s1);
    EXPECT_EQ(h.insert(chain_keys("", 50, 1)[0]), HostBlockCache::kNone) << "every slot pinned";
    h.unpin_all();
    EXPECT_NE(h.insert(chain_keys("", 50, 1)[0]), HostBlockCache::kNone);
    h.check_invariants();
}

}  // namespace
}  // namespace hichat::kv
