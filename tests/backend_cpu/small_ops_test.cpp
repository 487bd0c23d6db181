// The element-wise ops (embedding, rms_norm, rope, silu_mul, add_inplace) against double-precision
// references, for every weight dtype and awkward sizes.
#include <cmath>

#include "backend/cpu/ops.h"
#include "op_test_util.h"

namespace hichat::cpu {
namespace {

const DType kDtypes[] = {DType::kBF16, DType::kF16, DType::kF32};

TEST(Embedding, CopiesTheRowsOfTheIdsExactly) {
    const int64_t vocab = 37, dim = 65;
    std::vector<float> src = testing::random_floats(static_cast<size_t>(vocab * dim), 1);
    const std::vector<int32_t> ids = {0, 36, 5, 5, 17, 1, 36};
    for (DType dtype : kDtypes) {
        testing::StoredWeights table = testing::store_weights(src, dtype, {vocab, dim});
        std::vector<float> out(ids.size() * dim, NAN);
        embedding(ids.data(), static_cast<int64_t>(ids.size()), table.tensor, out.data());
        for (size_t i = 0; i < ids.size(); ++i)
            for (int64_t d = 0; d < dim; ++d)
                ASSERT_EQ(out[i * dim + d], table.values[ids[i] * dim + d]) << dtype_name(dtype) << " row " << i;
    }
}

TEST(RmsNorm, MatchesDoubleReferenceAndMayRunInPlace) {
    const float eps = 1e-5f;
    for (int64_t dim : {1, 7, 65, 2048, 3000}) {
        const int64_t m = 19;
        std::vector<float> x = testing::random_floats(static_cast<size_t>(m * dim), 2, 3.0f);
        std::vector<float> w_src = testing::random_floats(static_cast<size_t>(dim), 3);
        for (DType dtype : kDtypes) {
            testing::StoredWeights w = testing::store_weights(w_src, dtype, {dim});
            std::vector<double> want(x.size());
            for (int64_t i = 0; i < m; ++i) {
                double ss = 0.0;
                for (int64_t d = 0; d < dim; ++d) ss += double{x[i * dim + d]} * x[i * dim + d];
                double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
                for (int64_t d = 0; d < dim; ++d) want[i * dim + d] = x[i * dim + d] * inv * w.values[d];
            }
            std::vector<float> y(x.size());
            rms_norm(x.data(), m, dim, w.tensor, eps, y.data());
            EXPECT_LT(testing::relative_error(y, want), 1e-6) << "dim " << dim << " " << dtype_name(dtype);
            std::vector<float> in_place = x;
            rms_norm(in_place.data(), m, dim, w.tensor, eps, in_place.data());
            EXPECT_EQ(in_place, y) << "in place, dim " << dim;
        }
    }
}

TEST(Rope, RotatesHalvesByPositionTimesFrequency) {
    for (int head_dim : {64, 128, 6}) {
        const int num_heads = 3;
        const int64_t m = 11, row_stride = int64_t{num_heads} * head_dim + 5;  // rows strided as in fused qkv
        const int half = head_dim / 2;
        std::vector<float> inv_freq(static_cast<size_t>(half));
        for (int j = 0; j < half; ++j)
            inv_freq[j] = static_cast<float>(1.0 / std::pow(500000.0, 2.0 * j / head_dim));
        const std::vector<int32_t> positions = {0, 1, 2, 7, 100, 511, 1000, 4095, 4096, 8000, 131071};
        std::vector<float> x = testing::random_floats(static_cast<size_t>(m * row_stride), 4);
        std::vector<double> want(x.begin(), x.end());
        for (int64_t i = 0; i < m; ++i)
            for (int h = 0; h < num_heads; ++h)
                for (int j = 0; j < half; ++j) {
                    // The angle as transformers forms it: position * inv_freq rounded to fp32.
                    const double angle = static_cast<float>(positions[i]) * inv_freq[j];
                    const int64_t a = i * row_stride + int64_t{h} * head_dim + j, b = a + half;
                    want[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
                    want[b] = x[b] * std::cos(angle) + x[a] * std::sin(angle);
                }
        std::vector<float> two_step = x;  // rope_cos_sin once, then rope_apply: the same result
        std::vector<float> cos_sin(static_cast<size_t>(m * head_dim));
        rope_cos_sin(positions.data(), m, inv_freq.data(), head_dim, cos_sin.data());
        rope_apply(two_step.data(), m, row_stride, num_heads, head_dim, cos_sin.data());
        rope(x.data(), m, row_stride, num_heads, head_dim, positions.data(), inv_freq.data());
        EXPECT_LT(testing::relative_error(x, want), 1e-6) << "head_dim " << head_dim;
        EXPECT_EQ(two_step, x) << "head_dim " << head_dim;
        for (int64_t i = 0; i < m; ++i)  // the padding after the heads is untouched
            for (int64_t t = int64_t{num_heads} * head_dim; t < row_stride; ++t)
                ASSERT_EQ(x[i * row_stride + t], want[i * row_stride + t]);
    }
}

class SiluMulTest : public testing::ForcedLevelTest {};

TEST_P(SiluMulTest, MatchesDoubleReferenceAndMayRunInPlace) {
    const int64_t m = 7, dim = 333;  // 2331 elements: whole vectors and a tail
    std::vector<float> gate = testing::random_floats(static_cast<size_t>(m * dim), 5, 4.0f);
    std::vector<float> up = testing::random_floats(static_cast<size_t>(m * dim), 6);
    gate[0] = -100.0f;  // exp(-gate) large: silu -> -0
    gate[1] = 100.0f;
    gate[2] = 0.0f;
    gate[3] = -1e-3f;
    gate[m * dim - 1] = -30.0f;  // in the tail
    std::vector<double> want(gate.size());
    for (size_t i = 0; i < gate.size(); ++i) want[i] = gate[i] / (1.0 + std::exp(-double{gate[i]})) * up[i];
    std::vector<float> out(gate.size());
    silu_mul(gate.data(), up.data(), m, dim, out.data());
    EXPECT_LT(testing::relative_error(out, want), 1e-6);
    for (size_t i = 0; i < gate.size(); ++i)  // each element within a few fp32 ulps (or tiny)
        ASSERT_LE(std::abs(out[i] - want[i]), 1e-6 * std::abs(want[i]) + 1e-30) << "at " << i << " gate " << gate[i];
    silu_mul(gate.data(), up.data(), m, dim, gate.data());
    EXPECT_EQ(gate, out);
}

INSTANTIATE_TEST_SUITE_P(Levels, SiluMulTest, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_test_name);

TEST(AddInplace, AddsElementwise) {
    std::vector<float> x = testing::random_floats(1001, 7), y = testing::random_floats(1001, 8);
    std::vector<float> sum = x;
    add_inplace(sum.data(), y.data(), 1001);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(sum[i], x[i] + y[i]);
}

}  // namespace
}  // namespace hichat::cpu
