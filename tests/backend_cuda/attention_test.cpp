// paged_attention against cpu::attention: decode (with and without the split-KV workspace) and
// prefill / chunked prefill / mixed batches, head dims 64 and 128, GQA 1:1, 4:1, 8:1 (and 16:1),
// contexts 1 to 4096, several sequences of different lengths per batch, scrambled block tables.
#include <algorithm>
#include <numeric>
#include <thread>

#include "backend/cpu/ops.h"
#include "backend/cuda/ops.h"
#include "base/thread_pool.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;

struct SeqSpec {
    int num_new;    // new tokens this step
    int kv_len;     // tokens in the cache after the step (>= num_new)
};

struct BatchCase {
    int num_heads, num_kv_heads, head_dim, block_size;
    std::vector<SeqSpec> seqs;
};

// Runs one batch on the device and on the CPU; returns the relative error (and checks NaN/poison).
void check_batch(const BatchCase& c, bool use_workspace) {
    const uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    const int num_seqs = static_cast<int>(c.seqs.size());
    const int d = c.head_dim;
    const int kv_row = c.num_kv_heads * d;
    SCOPED_TRACE(::testing::Message() << "heads " << c.num_heads << "/" << c.num_kv_heads << " d " << d << " bs "
                                      << c.block_size << " seqs " << num_seqs << " workspace " << use_workspace
                                      << " seed " << seed);
    // Block tables: each sequence gets its blocks from a shuffled pool, with unused entries -1.
    int max_blocks = 0, total_blocks = 0, max_q = 0, max_kv = 0;
    for (const SeqSpec& s : c.seqs) {
        const int nb = (s.kv_len + c.block_size - 1) / c.block_size;
        max_blocks = std::max(max_blocks, nb);
        total_blocks += nb;
        max_q = std::max(max_q, s.num_new);
        max_kv = std::max(max_kv, s.kv_len);
    }
    const int num_blocks = total_blocks + 3;   // a few blocks nobody owns
    std::vector<int32_t> physical(num_blocks);
    std::iota(physical.begin(), physical.end(), 0);
    std::shuffle(physical.begin(), physical.end(), rng);
    std::vector<int32_t> tables(size_t{1} * num_seqs * max_blocks, -1);
    std::vector<int32_t> cu_q{0}, lens_kv;
    int next = 0;
    for (int s = 0; s < num_seqs; ++s) {
        const int nb = (c.seqs[s].kv_len + c.block_size - 1) / c.block_size;
        for (int b = 0; b < nb; ++b) tables[size_t{1} * s * max_blocks + b] = physical[next++];
        cu_q.push_back(cu_q.back() + c.seqs[s].num_new);
        lens_kv.push_back(c.seqs[s].kv_len);
    }
    const int num_tokens = cu_q.back();
    const size_t cache_elems = size_t{1} * num_blocks * c.block_size * kv_row;
    const auto k_bits = to_bf16(random_floats(rng, cache_elems, -2.0f, 2.0f));
    const auto v_bits = to_bf16(random_floats(rng, cache_elems, -2.0f, 2.0f));
    const auto q_bits = to_bf16(random_floats(rng, size_t{1} * num_tokens * c.num_heads * d, -2.0f, 2.0f));
    const auto k_all = from_bf16(k_bits), v_all = from_bf16(v_bits), q_all = from_bf16(q_bits);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));

    // CPU reference, one sequence at a time, on K/V gathered through the block table.
    std::vector<float> ref(q_all.size());
    for (int s = 0; s < num_seqs; ++s) {
        const SeqSpec& sp = c.seqs[s];
        std::vector<float> k(size_t{1} * sp.kv_len * kv_row), v(k.size());
        for (int j = 0; j < sp.kv_len; ++j) {
            const int64_t slot = int64_t{tables[size_t{1} * s * max_blocks + j / c.block_size]} * c.block_size +
                                 j % c.block_size;
            std::copy_n(k_all.begin() + slot * kv_row, kv_row, k.begin() + int64_t{j} * kv_row);
            std::copy_n(v_all.begin() + slot * kv_row, kv_row, v.begin() + int64_t{j} * kv_row);
        }
        const int64_t q_off = int64_t{cu_q[s]} * c.num_heads * d;
        cpu::attention(q_all.data() + q_off, int64_t{c.num_heads} * d, sp.num_new, sp.kv_len - sp.num_new, k.data(),
                       v.data(), kv_row, c.num_heads, c.num_kv_heads, d, scale, ref.data() + q_off, pool());
    }

    DeviceBuffer d_q = upload(q_bits), d_k = upload(k_bits), d_v = upload(v_bits);
    DeviceBuffer d_cu = upload(cu_q), d_lens = upload(lens_kv), d_tables = upload(tables);
    // A mixed batch both ways: all in the prefill kernel, and its one-token sequences in the decode kernel.
    const auto is_single = [](const SeqSpec& s) { return s.num_new == 1; };
    const int num_single = max_q == 1 ? 0 : static_cast<int>(std::count_if(c.seqs.begin(), c.seqs.end(), is_single));
    for (const int routed : {0, num_single}) {
        SCOPED_TRACE(::testing::Message() << "one-token sequences routed to the decode kernel: " << routed);
        DeviceBuffer d_out = poisoned(q_bits.size() * 2);
        const size_t ws_bytes = use_workspace ? attention_workspace_bytes(num_tokens, c.num_heads, d, max_kv) : 0;
        DeviceBuffer d_ws = poisoned(std::max<size_t>(ws_bytes, 16));
        AttentionMetadata meta;
        meta.cu_seqlens_q = d_cu.as<int32_t>();
        meta.seq_lens_kv = d_lens.as<int32_t>();
        meta.block_tables = d_tables.as<int32_t>();
        meta.num_seqs = num_seqs;
        meta.num_tokens = num_tokens;
        meta.max_blocks_per_seq = max_blocks;
        meta.max_seq_len_q = max_q;
        meta.max_seq_len_kv = max_kv;
        meta.num_single_token_seqs = routed;
        ASSERT_EQ(paged_attention(d_q.as<bf16>(), d_k.as<bf16>(), d_v.as<bf16>(), meta, c.num_heads, c.num_kv_heads,
                                  d, c.block_size, scale, d_out.as<bf16>(), use_workspace ? d_ws.data() : nullptr,
                                  ws_bytes, nullptr),
                  cudaSuccess);
        const auto out = from_bf16(download<uint16_t>(d_out, q_bits.size()));
        EXPECT_EQ(count_nan(out), 0u);
        EXPECT_LT(relative_error(out, ref), 1e-2);
        // Per sequence too, so a short sequence next to a long one cannot hide.
        for (int s = 0; s < num_seqs; ++s) {
            const size_t b = size_t{1} * cu_q[s] * c.num_heads * d, e = size_t{1} * cu_q[s + 1] * c.num_heads * d;
            const double err = relative_error(std::vector<float>(out.begin() + b, out.begin() + e),
                                              std::vector<float>(ref.begin() + b, ref.begin() + e));
            EXPECT_LT(err, 1e-2) << "sequence " << s << " (" << c.seqs[s].num_new << " new, " << c.seqs[s].kv_len
                                 << " kv)";
        }
        if (num_single == 0) break;
    }
}

class PagedAttentionTest : public CudaTest {};

TEST_F(PagedAttentionTest, DecodeMatchesCpu) {
    const std::vector<SeqSpec> lens = {{1, 1}, {1, 17}, {1, 100}, {1, 513}, {1, 1500}, {1, 4096}};
    for (int d : {64, 128}) {
        for (auto [h, kvh] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{16, 2}, std::pair{16, 1}}) {
            for (bool ws : {false, true}) check_batch({h, kvh, d, 16, lens}, ws);
        }
    }
}

TEST_F(PagedAttentionTest, DecodeSingleSequenceAndOddBlockSizes) {
    for (int bs : {1, 7, 32}) {
        check_batch({8, 2, 128, bs, {{1, 2049}}}, true);
        check_batch({4, 4, 64, bs, {{1, 33}, {1, 1}}}, true);
    }
}

TEST_F(PagedAttentionTest, DecodeSkipsSequencesWithNoNewToken) {
    // A sequence with no new token (cu_seqlens repeats) must not disturb its neighbours.
    check_batch({8, 2, 64, 16, {{1, 300}, {0, 40}, {1, 5}}}, true);
}

TEST_F(PagedAttentionTest, PrefillMatchesCpu) {
    const std::vector<SeqSpec> batch = {{37, 37}, {1, 201}, {100, 150}, {19, 19}, {5, 1005}};
    for (int d : {64, 128}) {
        for (auto [h, kvh] : {std::pair{4, 4}, std::pair{8, 2}, std::pair{16, 2}, std::pair{12, 4}}) {
            check_batch({h, kvh, d, 16, batch}, true);
        }
    }
}

TEST_F(PagedAttentionTest, SmallMixedBatch) {
    // Small enough for compute-sanitizer's racecheck: a prefill, a decode and a chunk, GQA 3:1.
    check_batch({12, 4, 64, 16, {{40, 40}, {1, 70}, {9, 33}}}, true);
    check_batch({8, 8, 128, 8, {{33, 33}, {1, 9}}}, true);
}

TEST_F(PagedAttentionTest, LongPrefillAndChunkedPrefill) {
    check_batch({8, 2, 128, 16, {{989, 989}, {256, 4096}}}, true);
    check_batch({16, 2, 64, 32, {{111, 111}, {7, 2000}, {300, 301}}}, true);
}

TEST_F(PagedAttentionTest, RejectsUnsupportedShapes) {
    AttentionMetadata meta;
    meta.num_seqs = 1;
    meta.num_tokens = 1;
    meta.max_seq_len_q = 1;
    EXPECT_EQ(paged_attention(nullptr, nullptr, nullptr, meta, 8, 2, 112, 16, 1.0f, nullptr, nullptr, 0, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(paged_attention(nullptr, nullptr, nullptr, meta, 8, 3, 64, 16, 1.0f, nullptr, nullptr, 0, nullptr),
              cudaErrorInvalidValue);
    meta.num_seqs = 0;
    EXPECT_EQ(paged_attention(nullptr, nullptr, nullptr, meta, 8, 3, 64, 16, 1.0f, nullptr, nullptr, 0, nullptr),
              cudaSuccess);
}

TEST(AttentionWorkspaceTest, GrowsWithContextAndIsZeroForShortOnes) {
    EXPECT_EQ(attention_workspace_bytes(64, 32, 128, 200), 0u);
    EXPECT_GT(attention_workspace_bytes(64, 32, 128, 4096), attention_workspace_bytes(64, 32, 128, 1024));
    EXPECT_EQ(attention_workspace_bytes(64, 32, 128, 1 << 20), attention_workspace_bytes(64, 32, 128, 1 << 21));
}

}  // namespace
}  // namespace hichat::cuda
