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
