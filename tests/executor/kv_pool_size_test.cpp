// KV pool sizes: what the budget holds, at most max_num_seqs full contexts (a bf16 / f16 CPU pool twice
// the tokens of an fp32 one); the CPU pool's memory becomes resident only where blocks are written; its
// rows are rounded to nearest even when written, and saved / loaded byte for byte in each dtype.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/fixtures.h"
#include "executor/cpu_kv_pool.h"
#include "executor/kv_pool_size.h"
#include "executor/runner_factory.h"
#include "executor/zero_pages.h"
#include "model/checkpoint.h"

namespace hichat::executor {
namespace {

// n values spread over a few binades, not exact in bf16 or f16.
std::vector<float> testing_values(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 2.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = dist(rng);
    return v;
}

float round_to(float f, DType dtype) {
    if (dtype == DType::kBF16) return bf16_to_f32(f32_to_bf16(f));
    if (dtype == DType::kF16) return f16_to_f32(f32_to_f16(f));
    return f;
}

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
    const int64_t per_block = CpuKvPool::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim, kCpuKvAutoDtype) * 16;
    auto runner = make_runner(**ckpt, {.device = DeviceKind::kCpu, .num_threads = 1,
                                       .cpu_kv_cache_bytes = 50 * per_block, .max_num_seqs = 1,
                                       .max_context_tokens = 16});
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    EXPECT_EQ((*runner)->num_kv_blocks(), 50);
}

TEST(KvPoolBlocks, ABf16OrF16CpuPoolHoldsTwiceTheBlocksOfTheSameMemory) {
    auto ckpt = model::Checkpoint::open(testing::fixture_dir("llama3"));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
    const model::ModelConfig& c = (*ckpt)->config();
    EXPECT_EQ(CpuKvPool::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim, DType::kF32),
              2 * CpuKvPool::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim, DType::kBF16));
    const int64_t f32_block = CpuKvPool::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim, DType::kF32) * 16;
    for (auto [dtype, blocks] : {std::pair{KvCacheDtype::kF32, 50}, std::pair{KvCacheDtype::kAuto, 50},
                                 std::pair{KvCacheDtype::kBf16, 100}, std::pair{KvCacheDtype::kF16, 100}}) {
        auto runner = make_runner(**ckpt, {.device = DeviceKind::kCpu, .num_threads = 1,
                                           .cpu_kv_cache_bytes = 50 * f32_block, .max_num_seqs = 1,
                                           .max_context_tokens = 16, .kv_cache_dtype = dtype});
        ASSERT_TRUE(runner.ok()) << runner.status().message();
        EXPECT_EQ((*runner)->num_kv_blocks(), blocks) << kv_cache_dtype_name(dtype);
    }
    auto fp8 = make_runner(**ckpt, {.device = DeviceKind::kCpu, .num_threads = 1, .kv_cache_dtype = KvCacheDtype::kFp8});
    ASSERT_FALSE(fp8.ok());
    EXPECT_NE(fp8.status().message().find("--kv-cache-dtype fp8"), std::string::npos) << fp8.status().message();
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
    CpuKvPool pool(/*num_layers=*/2, /*num_kv_heads=*/2, /*head_dim=*/64, /*num_blocks=*/1024, /*block_size=*/16,
                   DType::kF32);
    const std::vector<int32_t> table = {7, 3};
    auto* k = static_cast<float*>(pool.key_row(1, table, 17));   // block 3, row 1
    auto* v = static_cast<float*>(pool.value_row(1, table, 17));
    EXPECT_EQ(k[0], 0.0f);
    k[0] = 2.0f;
    v[127] = -3.0f;
    auto at = [&](const void* base, int64_t index) { return static_cast<const float*>(base)[index]; };
    EXPECT_EQ(at(pool.keys(1), (3 * 16 + 1) * pool.row_elements()), 2.0f);
    EXPECT_EQ(at(pool.values(1), (3 * 16 + 1) * pool.row_elements() + 127), -3.0f);
    EXPECT_EQ(at(pool.keys(0), (3 * 16 + 1) * pool.row_elements()), 0.0f);   // layers do not overlap
    EXPECT_EQ(at(pool.values(0), (3 * 16 + 1) * pool.row_elements() + 127), 0.0f);
}

// Rows written from fp32 hold f32_to_bf16 / f32_to_f16 of each value (round to nearest even: 1 + 2^-8
// is a bf16 tie that rounds down to 1, 1 + 3 * 2^-8 one that rounds up), in their own block only.
TEST(CpuKvPool, WritesRoundToNearestEvenInTheStoredDtype) {
    const int kv_heads = 1, head_dim = 24;   // a row of 24 elements
    const std::vector<int32_t> table = {2, 0};
    std::vector<float> key = testing_values(head_dim, 1), value = testing_values(head_dim, 2);
    key[0] = 1.0f + 0x1p-8f, key[1] = 1.0f + 3 * 0x1p-8f, key[2] = 1.0f + 0x1p-11f, key[3] = 1.0f + 3 * 0x1p-11f;
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
        SCOPED_TRACE(dtype_name(dtype));
        CpuKvPool pool(/*num_layers=*/2, kv_heads, head_dim, /*num_blocks=*/3, /*block_size=*/4, dtype);
        EXPECT_EQ(pool.block_bytes(), 2 * 2 * 4 * head_dim * dtype_size_bytes(dtype));
        pool.write(1, table, 5, key.data(), value.data());   // block 0, row 1
        for (int i = 0; i < head_dim; ++i) {
            ASSERT_EQ(load_as_f32(pool.key_row(1, table, 5), dtype, i), round_to(key[i], dtype)) << i;
            ASSERT_EQ(load_as_f32(pool.value_row(1, table, 5), dtype, i), round_to(value[i], dtype)) << i;
            ASSERT_EQ(load_as_f32(pool.values(1), dtype, (0 * 4 + 1) * head_dim + i), round_to(value[i], dtype));
            ASSERT_EQ(load_as_f32(pool.keys(0), dtype, (0 * 4 + 1) * head_dim + i), 0.0f);   // layer 0 untouched
        }
    }
    EXPECT_EQ(round_to(1.0f + 0x1p-8f, DType::kBF16), 1.0f);
    EXPECT_EQ(round_to(1.0f + 3 * 0x1p-8f, DType::kBF16), 1.0f + 0x1p-6f);
    EXPECT_EQ(round_to(1.0f + 0x1p-11f, DType::kF16), 1.0f);
    EXPECT_EQ(round_to(1.0f + 3 * 0x1p-11f, DType::kF16), 1.0f + 0x1p-9f);
}

// save_block() then load_block() into another block (of another pool) moves every layer's K and V
// bytes exactly, in each dtype, and nothing else: the prefix-cache offload / restore of CpuRunner.
TEST(CpuKvPool, SaveThenLoadIsByteExactInEachDtype) {
    const int layers = 3, kv_heads = 2, head_dim = 20, blocks = 4, block_size = 5;
    for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
        SCOPED_TRACE(dtype_name(dtype));
        CpuKvPool a(layers, kv_heads, head_dim, blocks, block_size, dtype);
        CpuKvPool b(layers, kv_heads, head_dim, blocks, block_size, dtype);
        const std::vector<int32_t> table_a = {3}, table_b = {1};
        uint32_t seed = 10;
        for (int layer = 0; layer < layers; ++layer)
            for (int pos = 0; pos < block_size; ++pos) {
                const std::vector<float> k = testing_values(kv_heads * head_dim, seed++);
                const std::vector<float> v = testing_values(kv_heads * head_dim, seed++);
                a.write(layer, table_a, pos, k.data(), v.data());
            }
        std::vector<std::byte> saved(static_cast<size_t>(a.block_bytes()), std::byte{0xAB});
        a.save_block(3, saved.data());
        b.load_block(1, saved.data());
        const size_t row_bytes = static_cast<size_t>(a.row_elements() * dtype_size_bytes(dtype));
        for (int layer = 0; layer < layers; ++layer)
            for (int pos = 0; pos < block_size; ++pos) {
                ASSERT_EQ(std::memcmp(a.key_row(layer, table_a, pos), b.key_row(layer, table_b, pos), row_bytes), 0);
                ASSERT_EQ(std::memcmp(a.value_row(layer, table_a, pos), b.value_row(layer, table_b, pos), row_bytes), 0);
            }
        std::vector<std::byte> again(saved.size()), other(saved.size());
        b.save_block(1, again.data());
        EXPECT_EQ(again, saved);
        b.save_block(0, other.data());   // the neighbouring blocks stay zeros
        EXPECT_EQ(other, std::vector<std::byte>(saved.size()));
        b.save_block(2, other.data());
        EXPECT_EQ(other, std::vector<std::byte>(saved.size()));
    }
}

}  // namespace
}  // namespace hichat::executor
