// attention() against a double-precision reference: head dims 64/128 (and an odd one), GQA 1:1, 4:1,
// 8:1, prefill from position 0, and decode / chunked prefill after earlier tokens (q_pos0 > 0), with
// q and k/v rows strided as in a fused qkv buffer. The bf16 / f16 K/V row kernels and paged attention
// over a bf16 / f16 cache against the same computation on the rounded values.
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

// K/V rows stored as bf16 / f16 bits (`bits`), and the floats they decode to (`values`, exact).
struct HalfRows {
    std::vector<uint16_t> bits;
    std::vector<float> values;
};

HalfRows round_rows(const std::vector<float>& src, DType dtype) {
    HalfRows r;
    r.bits.resize(src.size());
    r.values.resize(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        r.bits[i] = dtype == DType::kBF16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
        r.values[i] = dtype == DType::kBF16 ? bf16_to_f32(r.bits[i]) : f16_to_f32(r.bits[i]);
    }
    return r;
}

class HalfKvTest : public ForcedLevelTest {};

// dot_rows / sum_rows_weighted over bf16 / f16 rows: within fp32 rounding of a double reference on the
// rounded values, and of the fp32 kernel on those values (the rows are widened exactly and the same
// arithmetic runs; only the compiler's FMA contraction of the scalar tails may differ, by an ulp). Dims below, at and past a vector (8, 16) and a weighted-sum chunk (64,
// 128) and odd row counts, on rows padded by an odd stride; nothing past dim is written.
TEST_P(HalfKvTest, RowKernelsMatchTheFp32KernelOnTheRoundedValues) {
    const KernelTable& k = kernels_for(GetParam());
    uint32_t seed = 5000;
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        const auto dot_half = dtype == DType::kBF16 ? k.dot_rows_bf16 : k.dot_rows_f16;
        const auto sum_half = dtype == DType::kBF16 ? k.sum_rows_weighted_bf16 : k.sum_rows_weighted_f16;
        for (int64_t dim : {1, 7, 15, 16, 17, 40, 64, 72, 127, 128, 130, 200}) {
            for (int64_t num_rows : {1, 3, 5, 7, 64, 65}) {
                SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " dim=" << dim << " rows=" << num_rows);
                const int64_t stride = dim + 5;
                const std::vector<float> q = testing::random_floats(static_cast<size_t>(dim), seed++);
                const HalfRows rows = round_rows(
                    testing::random_floats(static_cast<size_t>(num_rows * stride), seed++, 3.0f), dtype);
                std::vector<float> weights = testing::random_floats(static_cast<size_t>(num_rows), seed++);
                for (float& w : weights) w = std::abs(w);
                const std::vector<float> start = testing::random_floats(static_cast<size_t>(dim), seed++);

                std::vector<float> dots(static_cast<size_t>(num_rows + 1), NAN), want_dots = dots;
                dot_half(q.data(), rows.bits.data(), stride, num_rows, dim, dots.data());
                k.dot_rows(q.data(), rows.values.data(), stride, num_rows, dim, want_dots.data());
                std::vector<float> sums = start, want_sums = start;
                sums.push_back(NAN), want_sums.push_back(NAN);   // a guard past dim
                sum_half(weights.data(), rows.bits.data(), stride, num_rows, dim, sums.data());
                k.sum_rows_weighted(weights.data(), rows.values.data(), stride, num_rows, dim, want_sums.data());

                for (int64_t j = 0; j < num_rows; ++j) {
                    double exact = 0.0, magnitude = 0.0;
                    for (int64_t d = 0; d < dim; ++d) {
                        exact += double{q[d]} * rows.values[j * stride + d];
                        magnitude += std::abs(double{q[d]} * rows.values[j * stride + d]);
                    }
                    ASSERT_NEAR(dots[j], exact, 1.2e-7 * static_cast<double>(dim) * magnitude + 1e-30) << "row " << j;
                    ASSERT_NEAR(dots[j], want_dots[j], 2.4e-7 * magnitude + 1e-30) << "row " << j;
                }
                EXPECT_TRUE(std::isnan(dots[num_rows])) << "wrote past num_rows";
                for (int64_t d = 0; d < dim; ++d) {
                    double exact = start[d], magnitude = std::abs(double{start[d]});
                    for (int64_t j = 0; j < num_rows; ++j) {
                        exact += double{weights[j]} * rows.values[j * stride + d];
                        magnitude += std::abs(double{weights[j]} * rows.values[j * stride + d]);
                    }
                    ASSERT_NEAR(sums[d], exact, 1.2e-7 * static_cast<double>(num_rows + 1) * magnitude) << "d " << d;
                    ASSERT_NEAR(sums[d], want_sums[d], 2.4e-7 * magnitude) << "d " << d;
                }
                EXPECT_TRUE(std::isnan(sums[dim])) << "wrote past dim";
            }
        }
    }
}

// paged_attention over a bf16 / f16 cache (blocks scrambled, block sizes 16 and 5) against the double
// reference on the rounded K/V values, to the fp32 path's bound; and within 1e-6 of the fp32 paged
// path on those values.
TEST_P(HalfKvTest, PagedAttentionMatchesTheReferenceOnTheRoundedValues) {
    ThreadPool pool(2);
    const AttentionCase cases[] = {{8, 2, 64, 0, 37}, {8, 2, 64, 90, 1}, {4, 1, 128, 33, 7},
                                   {2, 2, 17, 0, 21}, {6, 2, 40, 5, 3},  {4, 4, 72, 200, 1}};
    uint32_t seed = 7000;
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        for (int block_size : {16, 5}) {
            for (const AttentionCase& c : cases) {
                SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " block_size=" << block_size << " dim="
                                                  << c.head_dim << " q_pos0=" << c.q_pos0 << " num_q=" << c.num_q);
                const int64_t q_stride = int64_t{c.num_heads} * c.head_dim;
                const int64_t kv_stride = int64_t{c.num_kv_heads} * c.head_dim;
                const int64_t num_kv = c.q_pos0 + c.num_q;
                const int num_blocks = static_cast<int>((num_kv + block_size - 1) / block_size);
                std::vector<int32_t> table(static_cast<size_t>(num_blocks));
                for (int b = 0; b < num_blocks; ++b) table[static_cast<size_t>(b)] = (b * 7 + 3) % num_blocks;
                const std::vector<float> q = testing::random_floats(static_cast<size_t>(c.num_q * q_stride), seed++);
                const HalfRows k = round_rows(testing::random_floats(static_cast<size_t>(num_kv * kv_stride), seed++), dtype);
                const HalfRows v = round_rows(testing::random_floats(static_cast<size_t>(num_kv * kv_stride), seed++), dtype);
                const auto pool_size = static_cast<size_t>(num_blocks * block_size * kv_stride);
                std::vector<uint16_t> k_pool(pool_size, 0x7fc0), v_pool(pool_size, 0x7fc0);   // NaN in bf16 and f16
                std::vector<float> k_pool_f32(pool_size, NAN), v_pool_f32(pool_size, NAN);
                for (int64_t j = 0; j < num_kv; ++j) {
                    const int64_t slot = int64_t{table[static_cast<size_t>(j / block_size)]} * block_size + j % block_size;
                    std::copy_n(k.bits.begin() + j * kv_stride, kv_stride, k_pool.begin() + slot * kv_stride);
                    std::copy_n(v.bits.begin() + j * kv_stride, kv_stride, v_pool.begin() + slot * kv_stride);
                    std::copy_n(k.values.begin() + j * kv_stride, kv_stride, k_pool_f32.begin() + slot * kv_stride);
                    std::copy_n(v.values.begin() + j * kv_stride, kv_stride, v_pool_f32.begin() + slot * kv_stride);
                }
                const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
                std::vector<float> got(static_cast<size_t>(c.num_q * q_stride), NAN), f32(got.size(), NAN);
                paged_attention(q.data(), q_stride, c.num_q, c.q_pos0, k_pool.data(), v_pool.data(), dtype, kv_stride,
                                table.data(), block_size, c.num_heads, c.num_kv_heads, c.head_dim, scale, got.data(),
                                pool);
                paged_attention(q.data(), q_stride, c.num_q, c.q_pos0, k_pool_f32.data(), v_pool_f32.data(), kv_stride,
                                table.data(), block_size, c.num_heads, c.num_kv_heads, c.head_dim, scale, f32.data(),
                                pool);
                EXPECT_LT(testing::relative_error(got, reference_attention(q, q_stride, k.values, v.values, kv_stride,
                                                                           c, scale)),
                          1e-5);
                EXPECT_LT(testing::relative_error(got, std::vector<double>(f32.begin(), f32.end())), 1e-6);
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, HalfKvTest, ::testing::ValuesIn(testing::all_levels()), testing::level_test_name);

}  // namespace
}  // namespace hichat::cpu
