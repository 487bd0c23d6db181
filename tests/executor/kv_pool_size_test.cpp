// KV pool sizes: what the budget holds, at most max_num_seqs full contexts; and the CPU pool's memory
// becomes resident only where blocks are written.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/fixtures.h"
#include "executor/cpu_kv_pool.h"
#include "executor/kv_pool_size.h"
#include "executor/runner_factory.h"
#include "executor/zero_pages.h"
#include "model/checkpoint.h"

namespace hichat::executor {
namespace {

TEST(KvPoolBlocks, MaxNumSeqsFullContextsWhenThatIsLessThanTheBudget) {
    // ceil(1000 / 16) = 63 blocks per sequence, 4 sequences; the budget holds 10^6 blocks.
    EXPECT_EQ(kv_pool_blocks({.budget_bytes = int64_t{1} << 30, .bytes_per_block = 1024, .max_num_seqs = 4,
                              .context_tokens = 1000, .block_size_tokens = 16}),
              63 * 4);
    // A context that is a whole number of blocks takes no extra one.
    EXPECT_EQ(kv_pool_blocks({.budget_bytes = int64_t{1} << 30, .bytes_per_block = 1024, .max_num_seqs = 3,
                              .context_tokens = 1024, .block_size_tokens = 16}),
              64 * 3);
}

TEST(KvPoolBlocks, TheBudgetWhenThatIsLess) {
    EXPECT_EQ(kv_pool_blocks({.budget_bytes = 100 * 1024 + 1000, .bytes_per_block = 1024, .max_num_seqs = 256,
                              .context_tokens = 4096, .block_size_tokens = 16}),
              100);
    EXPECT_EQ(kv_pool_blocks({.budget_bytes = -5, .bytes_per_block = 1024, .max_num_seqs = 1, .context_tokens = 16}), 0);
}

TEST(KvPoolBlocks, ClampsToInt32) {
    EXPECT_EQ(kv_pool_blocks({.budget_bytes = int64_t{1} << 62, .bytes_per_block = 1, .max_num_seqs = 4096,
                              .context_tokens = 1 << 24, .block_size_tokens = 1}),
              2147483647);
}

TEST(KvPoolBlocks, TheCpuRunnerOfMakeRunnerIsSizedByMaxNumSeqsAndContext) {
    auto ckpt = model::Checkpoint::open(testing::fixture_dir("llama3"));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
    auto runner = make_runner(**ckpt, {.device = DeviceKind::kCpu, .num_threads = 1, .max_num_seqs = 3,
                                       .max_context_tokens = 100});
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    EXPECT_EQ((*runner)->num_kv_blocks(), 3 * 7);   // ceil(100 / 16) = 7
    // No --max-model-len: the model's 2048 positions.
    runner = make_runner(**ckpt, {.device = DeviceKind::kCpu, .num_threads = 1, .max_num_seqs = 2});
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    EXPECT_EQ((*runner)->num_kv_blocks(), 2 * 128);
}

TEST(KvPoolBlocks, AnExplicitCpuKvCacheSizeIsTakenAsAsked) {
    auto ckpt = model::Checkpoint::open(testing::fixture_dir("llama3"));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
    const model::ModelConfig& c = (*ckpt)->config();
    const int64_t per_block = CpuKvPool::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim) * 16;
    auto runner = make_runner(**ckpt, {.device = DeviceKind::kCpu, .num_threads = 1,
                                       .cpu_kv_cache_bytes = 50 * per_block, .max_num_seqs = 1,
                                       .max_context_tokens = 16});
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    EXPECT_EQ((*runner)->num_kv_blocks(), 50);
}

// Pages of [data, data + bytes) that are in memory, by mincore(2): exact for this mapping alone.
size_t resident_pages(const void* data, size_t bytes) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in_core((bytes + page - 1) / page);
    EXPECT_EQ(::mincore(const_cast<void*>(data), bytes, in_core.data()), 0) << std::strerror(errno);
    size_t n = 0;
    for (unsigned char c : in_core) n += c & 1;
    return n;
}

TEST(ZeroPages, ReadsAsZerosAndTakesMemoryOnlyWhereWritten) {
    const size_t bytes = size_t{256} << 20;
    ZeroPages pages(bytes);
    ASSERT_NE(pages.data(), nullptr);
    EXPECT_EQ(resident_pages(pages.data(), bytes), 0u);
    auto* f = static_cast<float*>(pages.data());
    f[12345] = 1.5f;
    EXPECT_EQ(f[12345], 1.5f);
    EXPECT_EQ(f[12346], 0.0f);
    // One written float: one page, or one transparent huge page (2 MiB) where those are on.
    const size_t resident = resident_pages(pages.data(), bytes);
    EXPECT_GE(resident, 1u);
    EXPECT_LE(resident, (size_t{2} << 20) / static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
}

TEST(ZeroPages, MovesOwnership) {
    ZeroPages a(size_t{1} << 20);
    void* data = a.data();
    ZeroPages b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.data(), data);
    EXPECT_EQ(b.num_bytes(), size_t{1} << 20);
    ZeroPages c;
    c = std::move(b);
    EXPECT_EQ(c.data(), data);
    EXPECT_EQ(b.data(), nullptr);
}

TEST(CpuKvPool, AFreshPoolIsZerosAndWritesLandInTheirBlock) {
    CpuKvPool pool(/*num_layers=*/2, /*num_kv_heads=*/2, /*head_dim=*/64, /*num_blocks=*/1024, /*block_size=*/16);
    const std::vector<int32_t> table = {7, 3};
    float* k = pool.key_row(1, table, 17);   // block 3, row 1
    float* v = pool.value_row(1, table, 17);
    EXPECT_EQ(k[0], 0.0f);
    k[0] = 2.0f;
    v[127] = -3.0f;
    EXPECT_EQ(pool.keys(1)[(3 * 16 + 1) * pool.row_floats()], 2.0f);
    EXPECT_EQ(pool.values(1)[(3 * 16 + 1) * pool.row_floats() + 127], -3.0f);
    EXPECT_EQ(pool.keys(0)[(3 * 16 + 1) * pool.row_floats()], 0.0f);   // layers do not overlap
    EXPECT_EQ(pool.values(0)[(3 * 16 + 1) * pool.row_floats() + 127], 0.0f);
}

}  // namespace
}  // namespace hichat::executor
