// int8 linear layers: the activation quantizer against its definition, and linear() on int8 weights
// against the exact integer reference, at every SIMD level (each names the int8 path it ran), on
// awkward shapes, fused outputs with biases, and the largest k at the extreme codes.
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "op_test_util.h"

namespace hichat::cpu {
namespace {

using testing::ForcedLevelTest;

struct Int8Weights {
    std::vector<int8_t> codes;  // [n, k]
    std::vector<float> scales;  // [n]
    model::WeightTensor tensor;
};

Int8Weights random_int8_weights(int64_t n, int64_t k, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> code(-128, 127);  // checkpoints may hold -128
    std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
    Int8Weights w;
    w.codes.resize(static_cast<size_t>(n * k));
    for (int8_t& c : w.codes) c = static_cast<int8_t>(code(rng));
    w.scales.resize(static_cast<size_t>(n));
    for (float& s : w.scales) s = scale(rng);
    w.tensor.data = w.codes.data();
    w.tensor.dtype = DType::kI8;
    w.tensor.shape = {n, k};
    w.tensor.scales = {.data = w.scales.data(), .dtype = DType::kF32, .block_rows = 1, .block_cols = k};
    return w;
}

// The definition: codes of x per row (quantize_row_int8 is checked against it below), the integer
// dot product in int64, then (x_scale * w_scale) * float(dot) (+ bias), as every path computes it.
std::vector<float> reference_i8(const std::vector<float>& x, int64_t m, int64_t k, const Int8Weights& w,
                                const std::vector<float>* bias) {
    const int64_t n = static_cast<int64_t>(w.scales.size()), stride = int8_rows_stride(k);
    std::vector<float> y(static_cast<size_t>(m * n));
    std::vector<uint8_t> codes(static_cast<size_t>(stride));
    for (int64_t i = 0; i < m; ++i) {
        float xs = 0.0f;
        quantize_row_int8(x.data() + i * k, k, codes.data(), &xs);
        for (int64_t j = 0; j < n; ++j) {
            int64_t dot = 0;
            for (int64_t c = 0; c < k; ++c) dot += (int64_t{codes[c]} - 128) * w.codes[j * k + c];
            y[i * n + j] = (xs * w.scales[j]) * static_cast<float>(dot);
            if (bias) y[i * n + j] += (*bias)[j];
        }
    }
    return y;
}

TEST(QuantizeRowInt8, CodesAreRoundedScaledValuesPaddedWithZeroCodes) {
    for (int64_t k : {1, 5, 63, 64, 65, 200}) {
        std::vector<float> x = testing::random_floats(static_cast<size_t>(k), static_cast<uint32_t>(k), 3.0f);
        x[static_cast<size_t>(k / 2)] = -7.5f;  // the largest magnitude, negative
        for (float& v : x) v = std::clamp(v, -7.0f, 7.0f);
        x[static_cast<size_t>(k / 2)] = -7.5f;
        const int64_t stride = int8_rows_stride(k);
        ASSERT_EQ(stride % 64, 0);
        ASSERT_GE(stride, k);
        std::vector<uint8_t> codes(static_cast<size_t>(stride), 0);
        float scale = 0.0f;
        quantize_row_int8(x.data(), k, codes.data(), &scale);
        EXPECT_FLOAT_EQ(scale, 7.5f / 127.0f);
        EXPECT_EQ(codes[static_cast<size_t>(k / 2)], 128 - 127);
        for (int64_t c = 0; c < k; ++c) {
            const int q = int{codes[c]} - 128;
            EXPECT_GE(q, -127);
            EXPECT_LE(q, 127);
            EXPECT_EQ(q, static_cast<int>(std::nearbyint(x[c] * (127.0f / 7.5f)))) << "k=" << k << " c=" << c;
            EXPECT_LE(std::fabs(q * scale - x[c]), scale / 2 * (1 + 1e-5)) << c;
        }
        for (int64_t c = k; c < stride; ++c) EXPECT_EQ(codes[c], 128) << "padding at " << c;
    }
    std::vector<float> zeros(10, 0.0f);
    std::vector<uint8_t> codes(static_cast<size_t>(int8_rows_stride(10)), 0);
    float scale = -1.0f;
    quantize_row_int8(zeros.data(), 10, codes.data(), &scale);
    EXPECT_EQ(scale, 0.0f);
    for (uint8_t c : codes) EXPECT_EQ(c, 128);
}

class LinearI8Test : public ForcedLevelTest {
protected:
    void SetUp() override {
        ForcedLevelTest::SetUp();
        if (IsSkipped()) return;
        std::printf("level %s: int8 path %s\n", std::string(simd_level_name(active_simd_level())).c_str(),
                    active_kernels().linear_i8_path);
    }
};

TEST_P(LinearI8Test, EqualsTheIntegerReference) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (int threads : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(threads));
    struct Shape {
        int64_t m, k, n;
    };
    std::vector<Shape> shapes = {{1, 1, 1}, {1, 15, 3}, {1, 16, 5}, {2, 17, 7}, {3, 63, 9}, {1, 64, 4},
                                 {4, 65, 67}, {5, 127, 1}, {1, 2048, 129}, {2, 4097, 20}, {1, 8195, 37},
                                 {9, 1000, 65}, {17, 333, 130}, {40, 200, 33}, {111, 96, 70}};
    uint32_t seed = 1;
    int case_index = 0;
    for (const Shape& s : shapes) {
        SCOPED_TRACE(::testing::Message() << "m=" << s.m << " k=" << s.k << " n=" << s.n);
        const Int8Weights w = random_int8_weights(s.n, s.k, seed++);
        std::vector<float> x = testing::random_floats(static_cast<size_t>(s.m * s.k), seed++);
        if (s.m > 2) std::fill(x.begin() + s.k, x.begin() + 2 * s.k, 0.0f);  // a zero row
        std::vector<float> y(static_cast<size_t>(s.m * s.n), NAN);
        linear(x.data(), s.m, w.tensor, nullptr, y.data(), *pools[static_cast<size_t>(case_index++ % 3)]);
        EXPECT_EQ(y, reference_i8(x, s.m, s.k, w, nullptr));
    }
}

// The integer sums at their limit: k = kInt8MaxK, every code and weight at its extreme.
TEST_P(LinearI8Test, LargestKAtExtremeCodesIsExact) {
    ThreadPool pool(2);
    const int64_t k = kInt8MaxK, n = 3;
    Int8Weights w = random_int8_weights(n, k, 7);
    for (int64_t c = 0; c < k; ++c) {
        w.codes[c] = 127;
        w.codes[k + c] = -128;
        w.codes[2 * k + c] = c % 2 ? 127 : -128;
    }
    std::vector<float> x(static_cast<size_t>(2 * k), 1.0f);
    std::fill(x.begin() + k, x.end(), -1.0f);
    std::vector<float> y(static_cast<size_t>(2 * n), NAN);
    linear(x.data(), 2, w.tensor, nullptr, y.data(), pool);
    EXPECT_EQ(y, reference_i8(x, 2, k, w, nullptr));
    EXPECT_EQ(y[0], ((1.0f / 127.0f) * w.scales[0]) * static_cast<float>(int64_t{127} * 127 * k));
}

TEST_P(LinearI8Test, FusedOutputsWithBiasesEachEqualTheirReference) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (int threads : {1, 2, 5}) pools.push_back(std::make_unique<ThreadPool>(threads));
    const std::vector<int64_t> rows = {64, 5, 100, 1};
    uint32_t seed = 50;
    for (int64_t m : {1, 3, 40}) {
        const int64_t k = 97;
        std::vector<float> x = testing::random_floats(static_cast<size_t>(m * k), seed++);
        std::vector<Int8Weights> weights;
        std::vector<testing::StoredWeights> biases;
        std::vector<std::vector<float>> bias_values;
        for (int64_t r : rows) {
            weights.push_back(random_int8_weights(r, k, seed++));
            bias_values.push_back(testing::random_floats(static_cast<size_t>(r), seed++));
            biases.push_back(testing::store_weights(bias_values.back(), DType::kF32, {r}));
        }
        for (auto& pool : pools) {
            SCOPED_TRACE(::testing::Message() << "m=" << m << " threads=" << pool->num_threads());
            std::vector<std::vector<float>> ys;
            std::vector<LinearOutput> outputs;
            for (int64_t r : rows) ys.emplace_back(static_cast<size_t>(m * r), NAN);
            for (size_t o = 0; o < rows.size(); ++o)
                outputs.push_back({&weights[o].tensor, o % 2 == 1 ? &biases[o].tensor : nullptr, ys[o].data()});
            linear_fused(x.data(), m, outputs, *pool);
            for (size_t o = 0; o < rows.size(); ++o) {
                EXPECT_EQ(ys[o], reference_i8(x, m, k, weights[o], o % 2 == 1 ? &bias_values[o] : nullptr))
                    << "output " << o;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, LinearI8Test, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_test_name);

}  // namespace
}  // namespace hichat::cpu
