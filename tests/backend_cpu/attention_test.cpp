// attention() against a double-precision reference: head dims 64/128 (and an odd one), GQA 1:1, 4:1,
// 8:1, prefill from position 0, and decode / chunked prefill after earlier tokens (q_pos0 > 0), with
// q and k/v rows strided as in a fused qkv buffer.
#include <algorithm>
#include <cmath>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "op_test_util.h"

namespace hichat::cpu {
namespace {

using testing::ForcedLevelTest;

struct AttentionCase {
    int num_heads, num_kv_heads, head_dim;
    int64_t q_pos0, num_q;
};

// out[i, h, :] = softmax_j(scale * q[i, h] . k[j, h / group]) v[j, h / group], j <= q_pos0 + i.
std::vector<double> reference_attention(const std::vector<float>& q, int64_t q_stride, const std::vector<float>& k,
                                        const std::vector<float>& v, int64_t kv_stride, const AttentionCase& c,
                                        double scale) {
    const int group = c.num_heads / c.num_kv_heads;
    std::vector<double> out(static_cast<size_t>(c.num_q * c.num_heads * c.head_dim));
    for (int64_t i = 0; i < c.num_q; ++i)
        for (int h = 0; h < c.num_heads; ++h) {
            const int64_t num_ctx = c.q_pos0 + i + 1;
            const float* qh = q.data() + i * q_stride + int64_t{h} * c.head_dim;
            std::vector<double> p(static_cast<size_t>(num_ctx));
            double max_s = -INFINITY;
            for (int64_t j = 0; j < num_ctx; ++j) {
                const float* kh = k.data() + j * kv_stride + int64_t{h / group} * c.head_dim;
                double s = 0.0;
                for (int d = 0; d < c.head_dim; ++d) s += double{qh[d]} * kh[d];
                p[j] = s * scale;
                max_s = std::max(max_s, p[j]);
            }
            double sum = 0.0;
            for (double& e : p) sum += (e = std::exp(e - max_s));
            double* o = out.data() + (i * c.num_heads + h) * c.head_dim;
            for (int64_t j = 0; j < num_ctx; ++j) {
                const float* vh = v.data() + j * kv_stride + int64_t{h / group} * c.head_dim;
                for (int d = 0; d < c.head_dim; ++d) o[d] += p[j] / sum * vh[d];
            }
        }
    return out;
}

class AttentionTest : public ForcedLevelTest {};

TEST_P(AttentionTest, MatchesDoubleReference) {
    const AttentionCase cases[] = {
        {4, 4, 64, 0, 1},     {4, 4, 64, 0, 37},    {8, 2, 128, 0, 19},  {8, 1, 64, 0, 111},
        {8, 2, 64, 5, 1},     {4, 1, 128, 300, 1},  {16, 2, 64, 990, 1}, {8, 2, 128, 700, 13},
        {4, 4, 72, 33, 9},    {6, 2, 40, 0, 50},    {2, 1, 17, 3, 4},
    };
    ThreadPool pool(2);
    uint32_t seed = 100;
    for (const AttentionCase& c : cases) {
        SCOPED_TRACE(::testing::Message() << "heads=" << c.num_heads << "/" << c.num_kv_heads << " dim=" << c.head_dim
                                          << " q_pos0=" << c.q_pos0 << " num_q=" << c.num_q);
        // Strides as in a fused [q | k | v] projection output, k and v padded by 3 floats.
        const int64_t q_stride = int64_t{c.num_heads + 2 * c.num_kv_heads} * c.head_dim;
        const int64_t kv_stride = int64_t{c.num_kv_heads} * c.head_dim + 3;
        const int64_t num_kv = c.q_pos0 + c.num_q;
        std::vector<float> q = testing::random_floats(static_cast<size_t>(c.num_q * q_stride), seed++);
        std::vector<float> k = testing::random_floats(static_cast<size_t>(num_kv * kv_stride), seed++);
        std::vector<float> v = testing::random_floats(static_cast<size_t>(num_kv * kv_stride), seed++);
        const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
        std::vector<float> out(static_cast<size_t>(c.num_q * c.num_heads * c.head_dim), NAN);
        attention(q.data(), q_stride, c.num_q, c.q_pos0, k.data(), v.data(), kv_stride, c.num_heads, c.num_kv_heads,
                  c.head_dim, scale, out.data(), pool);
        EXPECT_LT(testing::relative_error(out, reference_attention(q, q_stride, k, v, kv_stride, c, scale)), 1e-5);
    }
}

// The paged form equals the contiguous one when the same rows are scattered over blocks in a
// scrambled order (block size 16 and an odd 5).
TEST_P(AttentionTest, PagedEqualsContiguous) {
    ThreadPool pool(2);
    const AttentionCase cases[] = {{8, 2, 64, 0, 37}, {8, 2, 64, 90, 1}, {4, 1, 128, 33, 7}, {2, 2, 17, 0, 21}};
    uint32_t seed = 900;
    for (int block_size : {16, 5}) {
        for (const AttentionCase& c : cases) {
            SCOPED_TRACE(::testing::Message() << "block_size=" << block_size << " q_pos0=" << c.q_pos0);
            const int64_t q_stride = int64_t{c.num_heads} * c.head_dim;
            const int64_t kv_stride = int64_t{c.num_kv_heads} * c.head_dim;
            const int64_t num_kv = c.q_pos0 + c.num_q;
            const int num_blocks = static_cast<int>((num_kv + block_size - 1) / block_size);
            std::vector<int32_t> table(static_cast<size_t>(num_blocks));
            for (int b = 0; b < num_blocks; ++b) table[static_cast<size_t>(b)] = (b * 7 + 3) % num_blocks;
            std::vector<float> q = testing::random_floats(static_cast<size_t>(c.num_q * q_stride), seed++);
            std::vector<float> k = testing::random_floats(static_cast<size_t>(num_kv * kv_stride), seed++);
            std::vector<float> v = testing::random_floats(static_cast<size_t>(num_kv * kv_stride), seed++);
            std::vector<float> k_pool(static_cast<size_t>(num_blocks * block_size * kv_stride), NAN);
            std::vector<float> v_pool = k_pool;
            for (int64_t j = 0; j < num_kv; ++j) {
                const int64_t slot = int64_t{table[static_cast<size_t>(j / block_size)]} * block_size + j % block_size;
                std::copy_n(k.begin() + j * kv_stride, kv_stride, k_pool.begin() + slot * kv_stride);
                std::copy_n(v.begin() + j * kv_stride, kv_stride, v_pool.begin() + slot * kv_stride);
            }
            const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
            std::vector<float> want(static_cast<size_t>(c.num_q * q_stride)), got(want.size(), NAN);
            attention(q.data(), q_stride, c.num_q, c.q_pos0, k.data(), v.data(), kv_stride, c.num_heads,
                      c.num_kv_heads, c.head_dim, scale, want.data(), pool);
            paged_attention(q.data(), q_stride, c.num_q, c.q_pos0, k_pool.data(), v_pool.data(), kv_stride, table.data(),
                            block_size, c.num_heads, c.num_kv_heads, c.head_dim, scale, got.data(), pool);
            EXPECT_LT(testing::relative_error(got, std::vector<double>(want.begin(), want.end())), 1e-6);
        }
    }
}

// With one key, the output is that key's value row, whatever the query.
TEST_P(AttentionTest, SingleKeyReturnsItsValue) {
    ThreadPool pool(3);
    const int num_heads = 8, num_kv_heads = 2, head_dim = 64;
    std::vector<float> q = testing::random_floats(num_heads * head_dim, 1, 10.0f);
    std::vector<float> k = testing::random_floats(num_kv_heads * head_dim, 2);
    std::vector<float> v = testing::random_floats(num_kv_heads * head_dim, 3);
    std::vector<float> out(num_heads * head_dim);
    attention(q.data(), num_heads * head_dim, 1, 0, k.data(), v.data(), num_kv_heads * head_dim, num_heads,
              num_kv_heads, head_dim, 0.125f, out.data(), pool);
    for (int h = 0; h < num_heads; ++h)
        for (int d = 0; d < head_dim; ++d)
            ASSERT_NEAR(out[h * head_dim + d], v[(h / 4) * head_dim + d], 1e-6f) << "head " << h;
}

// The vectorised exp of the softmax kernel over a wide range of scores (-250 .. 0 after the max).
TEST_P(AttentionTest, SoftmaxKernelMatchesDoubleOverWideRange) {
    for (int64_t n : {1, 5, 16, 17, 100, 1001}) {
        const std::vector<float> input = testing::random_floats(static_cast<size_t>(n), static_cast<uint32_t>(n), 40.0f);
        std::vector<float> x = input;
        const float scale = 0.9f;
        double max_value = -INFINITY, sum = 0.0;
        for (float v : x) max_value = std::max(max_value, double{v} * scale);
        std::vector<double> want(x.size());
        for (size_t j = 0; j < x.size(); ++j) sum += (want[j] = std::exp(double{x[j]} * scale - max_value));
        for (double& w : want) w /= sum;
        kernels_for(GetParam()).softmax(x.data(), n, scale);
        EXPECT_LT(testing::relative_error(x, want), 1e-6) << "n=" << n;
        // Small probabilities too, not just the norm. Forming the fp32 argument x * scale - max rounds
        // by up to ~6e-8 * (|x * scale| + |max|) each step, which becomes that relative error of exp.
        for (size_t j = 0; j < x.size(); ++j) {
            const double arg_rounding = 1.2e-7 * (std::abs(double{input[j]} * scale) + std::abs(max_value));
            ASSERT_NEAR(x[j], want[j], want[j] * (1e-6 + arg_rounding) + 1e-37) << "n=" << n << " j=" << j;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, AttentionTest, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_test_name);

}  // namespace
}  // namespace hichat::cpu
