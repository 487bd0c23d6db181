// The tensor-core prefill path of paged_attention (every batch here has max_seq_len_q > 1) against
// cpu::attention on K/V gathered through the block table: awkward row counts (1, 7, 19, 111, 989 new
// tokens, so 64-row tiles end part-full and GQA groups straddle tiles), contexts up to 4096, chunked
// prefill over a cached prefix, decodes mixed into prefill batches, GQA 1:1 / 4:1 / 8:1, head dims 64
// and 128, block sizes 1, 7, 16, 32 over scrambled block tables, and a q buffer that is not 16-byte
// aligned.
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

struct Seq {
    int num_new;   // new tokens this step
    int kv_len;    // tokens in the cache after the step (>= num_new)
};

struct Case {
    int num_heads, num_kv_heads, head_dim, block_size;
    std::vector<Seq> seqs;
    int q_shift = 0;   // bf16 elements q and out are shifted by inside their buffers (alignment)
};

// Host copy of one batch: metadata, bf16 inputs and their float values.
struct HostBatch {
    int max_blocks = 0, num_tokens = 0, max_q = 0, max_kv = 0;
    std::vector<int32_t> tables, cu_q{0}, lens_kv;
    std::vector<uint16_t> q_bits, k_bits, v_bits;
};

// Each sequence gets its blocks from a shuffled pool (plus blocks nobody owns); unused entries are -1.
HostBatch make_batch(const Case& c, std::mt19937& rng) {
    HostBatch h;
    int total_blocks = 0;
    for (const Seq& s : c.seqs) {
        const int nb = (s.kv_len + c.block_size - 1) / c.block_size;
        h.max_blocks = std::max(h.max_blocks, nb);
        total_blocks += nb;
        h.max_q = std::max(h.max_q, s.num_new);
        h.max_kv = std::max(h.max_kv, s.kv_len);
        h.cu_q.push_back(h.cu_q.back() + s.num_new);
        h.lens_kv.push_back(s.kv_len);
    }
    h.num_tokens = h.cu_q.back();
    const int num_blocks = total_blocks + 5;
    std::vector<int32_t> physical(num_blocks);
    std::iota(physical.begin(), physical.end(), 0);
    std::shuffle(physical.begin(), physical.end(), rng);
    h.tables.assign(size_t{1} * c.seqs.size() * h.max_blocks, -1);
    int next = 0;
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        const int nb = (c.seqs[s].kv_len + c.block_size - 1) / c.block_size;
        for (int b = 0; b < nb; ++b) h.tables[s * h.max_blocks + b] = physical[next++];
    }
    const size_t cache_elems = size_t{1} * num_blocks * c.block_size * c.num_kv_heads * c.head_dim;
    h.k_bits = to_bf16(random_floats(rng, cache_elems, -2.0f, 2.0f));
    h.v_bits = to_bf16(random_floats(rng, cache_elems, -2.0f, 2.0f));
    h.q_bits = to_bf16(random_floats(rng, size_t{1} * h.num_tokens * c.num_heads * c.head_dim, -2.0f, 2.0f));
    return h;
}

// cpu::attention one sequence at a time, on K/V gathered through the block table.
std::vector<float> reference(const Case& c, const HostBatch& h) {
    const int d = c.head_dim, kv_row = c.num_kv_heads * d;
    const auto k_all = from_bf16(h.k_bits), v_all = from_bf16(h.v_bits), q_all = from_bf16(h.q_bits);
    std::vector<float> ref(q_all.size());
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        const Seq& sp = c.seqs[s];
        std::vector<float> k(size_t{1} * sp.kv_len * kv_row), v(k.size());
        for (int j = 0; j < sp.kv_len; ++j) {
            const int64_t slot = int64_t{h.tables[s * h.max_blocks + j / c.block_size]} * c.block_size + j % c.block_size;
            std::copy_n(k_all.begin() + slot * kv_row, kv_row, k.begin() + int64_t{j} * kv_row);
            std::copy_n(v_all.begin() + slot * kv_row, kv_row, v.begin() + int64_t{j} * kv_row);
        }
        const int64_t q_off = int64_t{h.cu_q[s]} * c.num_heads * d;
        cpu::attention(q_all.data() + q_off, int64_t{c.num_heads} * d, sp.num_new, sp.kv_len - sp.num_new, k.data(),
                       v.data(), kv_row, c.num_heads, c.num_kv_heads, d, 1.0f / std::sqrt(float(d)), ref.data() + q_off,
                       pool());
    }
    return ref;
}

// paged_attention on the device; returns the output as floats (poisoned first: unwritten rows are NaN).
// num_single: AttentionMetadata::num_single_token_seqs (0: every sequence through the prefill kernel).
std::vector<float> run_device(const Case& c, const HostBatch& h, int num_single) {
    std::vector<uint16_t> q_shifted(c.q_shift, 0);
    q_shifted.insert(q_shifted.end(), h.q_bits.begin(), h.q_bits.end());
    DeviceBuffer d_q = upload(q_shifted), d_k = upload(h.k_bits), d_v = upload(h.v_bits);
    DeviceBuffer d_cu = upload(h.cu_q), d_lens = upload(h.lens_kv), d_tables = upload(h.tables);
    DeviceBuffer d_out = poisoned(q_shifted.size() * 2);
    const size_t ws_bytes = attention_workspace_bytes(h.num_tokens, c.num_heads, c.head_dim, h.max_kv);
    DeviceBuffer d_ws(std::max<size_t>(ws_bytes, 16));
    AttentionMetadata meta;
    meta.cu_seqlens_q = d_cu.as<int32_t>();
    meta.seq_lens_kv = d_lens.as<int32_t>();
    meta.block_tables = d_tables.as<int32_t>();
    meta.num_seqs = static_cast<int>(c.seqs.size());
    meta.num_tokens = h.num_tokens;
    meta.max_blocks_per_seq = h.max_blocks;
    meta.max_seq_len_q = h.max_q;
    meta.max_seq_len_kv = h.max_kv;
    meta.num_single_token_seqs = num_single;
    EXPECT_EQ(paged_attention(d_q.as<bf16>() + c.q_shift, d_k.as<bf16>(), d_v.as<bf16>(), meta, c.num_heads,
                              c.num_kv_heads, c.head_dim, c.block_size, 1.0f / std::sqrt(float(c.head_dim)),
                              d_out.as<bf16>() + c.q_shift, d_ws.data(), ws_bytes, nullptr),
              cudaSuccess);
    const auto out = from_bf16(download<uint16_t>(d_out, q_shifted.size()));
    return std::vector<float>(out.begin() + c.q_shift, out.end());
}

void check_output(const Case& c, const HostBatch& h, const std::vector<float>& ref, const std::vector<float>& out) {
    EXPECT_EQ(count_nan(out), 0u);
    EXPECT_LT(relative_error(out, ref), 1e-2);
    const size_t row = size_t{1} * c.num_heads * c.head_dim;
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        const auto b = static_cast<std::ptrdiff_t>(h.cu_q[s] * row), e = static_cast<std::ptrdiff_t>(h.cu_q[s + 1] * row);
        const double err = relative_error(std::vector<float>(out.begin() + b, out.begin() + e),
                                          std::vector<float>(ref.begin() + b, ref.begin() + e));
        EXPECT_LT(err, 1e-2) << "sequence " << s << " (" << c.seqs[s].num_new << " new, " << c.seqs[s].kv_len << " kv)";
        // The last token sees the most keys: check it alone too, so that a wrong tail cannot hide.
        if (c.seqs[s].num_new > 0) {
            const double last = relative_error(std::vector<float>(out.begin() + e - row, out.begin() + e),
                                               std::vector<float>(ref.begin() + e - row, ref.begin() + e));
            EXPECT_LT(last, 2e-2) << "last token of sequence " << s;
        }
    }
}

void check(const Case& c) {
    const uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    SCOPED_TRACE(::testing::Message() << "heads " << c.num_heads << "/" << c.num_kv_heads << " d " << c.head_dim
                                      << " bs " << c.block_size << " seqs " << c.seqs.size() << " q_shift "
                                      << c.q_shift << " seed " << seed);
    const HostBatch h = make_batch(c, rng);
    ASSERT_GT(h.max_q, 1) << "these cases must take the prefill path";
    const std::vector<float> ref = reference(c, h);
    const int num_single = static_cast<int>(std::count_if(c.seqs.begin(), c.seqs.end(), [](const Seq& s) {
        return s.num_new == 1;
    }));
    // A mixed batch both ways: all in the prefill kernel, and its one-token sequences in the decode kernel.
    for (const int routed : {0, num_single}) {
        SCOPED_TRACE(::testing::Message() << "one-token sequences routed to the decode kernel: " << routed);
        check_output(c, h, ref, run_device(c, h, routed));
        if (num_single == 0) break;
    }
}

class PrefillAttentionTest : public CudaTest {};

TEST_F(PrefillAttentionTest, AwkwardRowCountsFreshPrefill) {
    // One sequence of 1 token shares the batch with a longer one so that max_seq_len_q > 1.
    for (int d : {64, 80, 96, 128, 256}) {
        for (auto [h, kvh] : {std::pair{8, 2}, std::pair{32, 4}}) {
            check({h, kvh, d, 16, {{1, 1}, {7, 7}, {19, 19}, {111, 111}}});
            check({h, kvh, d, 16, {{989, 989}}});
        }
    }
}

TEST_F(PrefillAttentionTest, ChunkedPrefillOverCachedPrefix) {
    for (int d : {64, 80, 96, 128, 256}) {
        check({8, 2, d, 16, {{111, 4096}, {7, 1000}}});
        check({16, 2, d, 32, {{19, 2500}, {300, 301}, {64, 128}}});
        check({4, 4, d, 16, {{989, 2000}}});
    }
}

TEST_F(PrefillAttentionTest, MixedDecodesAndPrefills) {
    check({32, 8, 128, 16, {{1, 500}, {37, 37}, {1, 1}, {0, 50}, {128, 700}, {1, 4096}}});
    check({12, 3, 64, 16, {{1, 33}, {65, 65}, {1, 2}, {2, 2}}});
    for (int d : {80, 96, 256}) check({8, 2, d, 7, {{1, 300}, {37, 37}, {1, 1}, {70, 400}}});
}

TEST_F(PrefillAttentionTest, OddBlockSizesAndScrambledTables) {
    for (int bs : {1, 7, 32}) {
        check({8, 1, 128, bs, {{19, 19}, {100, 333}}});
        check({8, 8, 64, bs, {{63, 63}, {65, 200}}});
    }
}

TEST_F(PrefillAttentionTest, UnalignedQueryBuffer) {
    // q and out 4 bytes past a 16-byte boundary: paged_attention only promises 4-byte aligned out.
    Case c{8, 2, 128, 16, {{45, 45}, {20, 90}}};
    c.q_shift = 2;
    check(c);
    c.head_dim = 64;
    check(c);
}

}  // namespace
}  // namespace hichat::cuda
