// The decode path of paged_attention (at most one new token per sequence) against cpu::paged_attention:
// Llama-3-8B shapes, head dims 64/128, GQA 1:1 to 32:1 (two row groups per kv head), split-KV with a full,
// reduced or missing workspace, and the two CUDA-graph cases: meta.max_seq_len_kv larger than every
// actual length (a power-of-two bucket) and sequences with no new token. A guard row after the output
// must stay untouched.
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

constexpr uint16_t kPoisonBits = 0xffff;   // poisoned() fills with 0xff bytes

struct DecodeSeq {
    int num_new;   // 0 or 1
    int kv_len;    // tokens in the cache after the step
};

struct DecodeCase {
    int num_heads, num_kv_heads, head_dim, block_size;
    std::vector<DecodeSeq> seqs;
    int max_seq_len_kv = 0;          // 0: the largest kv_len; larger: a CUDA-graph bucket
    double workspace_share = 1.0;    // of attention_workspace_bytes(); 0: no workspace
};

// The batch's paged cache: block tables drawn from a shuffled pool (unused entries -1), K/V random bf16.
struct PagedBatch {
    int max_blocks = 0;
    std::vector<int32_t> tables, cu_q, lens_kv;
    std::vector<uint16_t> k_bits, v_bits, q_bits;
};

PagedBatch make_batch(const DecodeCase& c, std::mt19937& rng) {
    PagedBatch b;
    int total_blocks = 0;
    for (const DecodeSeq& s : c.seqs) {
        const int nb = (s.kv_len + c.block_size - 1) / c.block_size;
        b.max_blocks = std::max(b.max_blocks, nb);
        total_blocks += nb;
    }
    b.max_blocks = std::max(b.max_blocks, 1);
    const int num_blocks = total_blocks + 2;   // a few blocks nobody owns
    std::vector<int32_t> physical(num_blocks);
    std::iota(physical.begin(), physical.end(), 0);
    std::shuffle(physical.begin(), physical.end(), rng);
    b.tables.assign(c.seqs.size() * b.max_blocks, -1);
    b.cu_q = {0};
    int next = 0;
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        const int nb = (c.seqs[s].kv_len + c.block_size - 1) / c.block_size;
        for (int i = 0; i < nb; ++i) b.tables[s * b.max_blocks + i] = physical[next++];
        b.cu_q.push_back(b.cu_q.back() + c.seqs[s].num_new);
        b.lens_kv.push_back(c.seqs[s].kv_len);
    }
    const size_t cache_elems = size_t{1} * num_blocks * c.block_size * c.num_kv_heads * c.head_dim;
    b.k_bits = to_bf16(random_floats(rng, cache_elems, -2.0f, 2.0f));
    b.v_bits = to_bf16(random_floats(rng, cache_elems, -2.0f, 2.0f));
    b.q_bits = to_bf16(random_floats(rng, size_t{1} * b.cu_q.back() * c.num_heads * c.head_dim, -2.0f, 2.0f));
    return b;
}

std::vector<float> cpu_reference(const DecodeCase& c, const PagedBatch& b, float scale) {
    const std::vector<float> k = from_bf16(b.k_bits), v = from_bf16(b.v_bits), q = from_bf16(b.q_bits);
    const int64_t row = int64_t{c.num_heads} * c.head_dim;
    std::vector<float> ref(q.size());
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        if (c.seqs[s].num_new == 0) continue;
        const int64_t off = int64_t{b.cu_q[s]} * row;
        cpu::paged_attention(q.data() + off, row, 1, c.seqs[s].kv_len - 1, k.data(), v.data(),
                             int64_t{c.num_kv_heads} * c.head_dim, b.tables.data() + s * b.max_blocks, c.block_size,
                             c.num_heads, c.num_kv_heads, c.head_dim, scale, ref.data() + off, pool());
    }
    return ref;
}

void check_decode(const DecodeCase& c) {
    const uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    SCOPED_TRACE(::testing::Message() << "heads " << c.num_heads << "/" << c.num_kv_heads << " d " << c.head_dim
                                      << " bs " << c.block_size << " seqs " << c.seqs.size() << " max_seq_len_kv "
                                      << c.max_seq_len_kv << " workspace " << c.workspace_share << " seed " << seed);
    const PagedBatch b = make_batch(c, rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    const std::vector<float> ref = cpu_reference(c, b, scale);

    AttentionMetadata meta;
    meta.num_seqs = static_cast<int>(c.seqs.size());
    meta.num_tokens = b.cu_q.back();
    meta.max_blocks_per_seq = b.max_blocks;
    meta.max_seq_len_q = 1;
    meta.max_seq_len_kv = std::max(c.max_seq_len_kv, *std::max_element(b.lens_kv.begin(), b.lens_kv.end()));
    const size_t full_ws = attention_workspace_bytes(meta.num_tokens, c.num_heads, c.head_dim, meta.max_seq_len_kv);
    const size_t ws_bytes = static_cast<size_t>(static_cast<double>(full_ws) * c.workspace_share);
    DeviceBuffer d_q = upload(b.q_bits), d_k = upload(b.k_bits), d_v = upload(b.v_bits);
    DeviceBuffer d_cu = upload(b.cu_q), d_lens = upload(b.lens_kv), d_tables = upload(b.tables);
    const size_t row = size_t{1} * c.num_heads * c.head_dim;
    DeviceBuffer d_out = poisoned((b.q_bits.size() + row) * 2);   // one guard row past the end
    DeviceBuffer d_ws = poisoned(std::max<size_t>(ws_bytes, 16));
    meta.cu_seqlens_q = d_cu.as<int32_t>();
    meta.seq_lens_kv = d_lens.as<int32_t>();
    meta.block_tables = d_tables.as<int32_t>();
    ASSERT_EQ(paged_attention(d_q.as<bf16>(), d_k.as<bf16>(), d_v.as<bf16>(), meta, c.num_heads, c.num_kv_heads,
                              c.head_dim, c.block_size, scale, d_out.as<bf16>(), ws_bytes > 0 ? d_ws.data() : nullptr,
                              ws_bytes, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> out_bits = download<uint16_t>(d_out, b.q_bits.size() + row);
    for (size_t i = b.q_bits.size(); i < out_bits.size(); ++i) ASSERT_EQ(out_bits[i], kPoisonBits) << "guard " << i;
    const std::vector<float> out = from_bf16(std::vector<uint16_t>(out_bits.begin(), out_bits.end() - row));
    EXPECT_EQ(count_nan(out), 0u);
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        if (c.seqs[s].num_new == 0) continue;
        const size_t begin = b.cu_q[s] * row, end = begin + row;
        const double err = relative_error(std::vector<float>(out.begin() + begin, out.begin() + end),
                                          std::vector<float>(ref.begin() + begin, ref.begin() + end));
        EXPECT_LT(err, 1e-2) << "sequence " << s << " (kv " << c.seqs[s].kv_len << ")";
    }
}

class DecodeAttentionTest : public CudaTest {};

TEST_F(DecodeAttentionTest, LlamaShapesMatchCpu) {
    check_decode({32, 8, 128, 16, {{1, 1}, {1, 15}, {1, 16}, {1, 17}, {1, 255}, {1, 1000}, {1, 2049}}});
    check_decode({32, 8, 64, 16, {{1, 3}, {1, 64}, {1, 777}, {1, 3000}}});
}

TEST_F(DecodeAttentionTest, GqaRatiosAndHeadDims) {
    // 1:1, 8:1, 16:1 (one full row group) and 32:1 (two row groups per kv head).
    for (int d : {64, 80, 96, 128, 256}) {
        for (auto [h, kvh] : {std::pair{8, 8}, std::pair{16, 2}, std::pair{16, 1}, std::pair{32, 1}}) {
            for (double ws : {1.0, 0.0}) check_decode({h, kvh, d, 16, {{1, 5}, {1, 300}, {1, 1300}}, 0, ws});
        }
    }
}

TEST_F(DecodeAttentionTest, PaddedAndLargeHeadDimsWithOddBlocksAndSplits) {
    // 80 and 96: rows of 10 and 12 chunks (padded tiles; FP8 rows of 5 and 6 chunks do not divide a
    // warp's 32 copies); 256: one block per SM, two stages. Odd block sizes and a large bucket.
    for (int d : {80, 96, 256}) {
        check_decode({32, 8, d, 7, {{1, 1}, {1, 17}, {1, 999}, {1, 3001}}});
        check_decode({8, 2, d, 16, {{0, 40}, {1, 513}, {1, 2}}, 8192, 0.2});
    }
}

TEST_F(DecodeAttentionTest, ManySequencesNoSplit) {
    std::vector<DecodeSeq> seqs;
    for (int i = 0; i < 96; ++i) seqs.push_back({1, 1 + (i * 37) % 400});
    check_decode({32, 8, 128, 16, seqs});
}

TEST_F(DecodeAttentionTest, MaxSeqLenLargerThanEveryLength) {
    // The runner passes a power-of-two bucket: the splits past a sequence's end must add nothing.
    check_decode({32, 8, 128, 16, {{1, 1}, {1, 100}, {1, 700}, {1, 3000}}, 8192});
    check_decode({8, 2, 64, 7, {{1, 40}, {1, 513}}, 16384});
    check_decode({32, 8, 128, 16, {{1, 9}}, 32768});
    check_decode({32, 8, 128, 16, {{1, 1000}, {1, 2000}}, 4096, 0.0});
}

TEST_F(DecodeAttentionTest, SequencesWithNoNewToken) {
    // cu_seqlens_q repeats: those sequences produce no row and must not disturb their neighbours, with
    // and without split-KV, and inside a larger bucket.
    check_decode({32, 8, 128, 16, {{0, 4000}, {1, 2500}, {0, 1}, {1, 33}, {0, 0}}});
    check_decode({32, 8, 128, 16, {{1, 600}, {0, 700}, {1, 1}}, 2048, 0.0});
    check_decode({16, 2, 64, 16, {{0, 50}, {1, 5000}, {0, 6000}}, 8192});
}

TEST_F(DecodeAttentionTest, SmallWorkspaceMeansFewerSplits) {
    for (double share : {0.5, 0.2, 0.05}) check_decode({32, 8, 128, 16, {{1, 8000}, {1, 123}}, 0, share});
}

}  // namespace
}  // namespace hichat::cuda
