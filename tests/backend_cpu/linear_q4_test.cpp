// 4-bit linear layers (base/q4_layout.h): the activations' group sums against their definition, and
// linear() on 4-bit weights, symmetric and with a zero code z per group, against the exact integer
// sums of each group combined in double, at every SIMD level (each names the 4-bit path it ran), on
// awkward shapes (k not a multiple of a group or of a line, n not a multiple of a register block, m
// across the decode and prefill blocking), fused outputs with biases, and every code at its extremes.
// Bound: the paths sum the groups' fp32 terms in different orders, so |y - ref| <= 4e-6 * x_scale *
// sum_g |scale_g| * (|dot_g| + z |sum_g|) (the fp32 rounding of that many terms); one element missed
// or wrong moves y by about 1e-4 of that.
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "base/q4_layout.h"
#include "op_test_util.h"

namespace hichat::cpu {
namespace {

using testing::ForcedLevelTest;

struct Q4Weights {
    std::vector<uint8_t> codes;    // [n, k] unpacked, 0..15
    std::vector<uint8_t> packed;   // [n, q4_row_bytes(k)]
    std::vector<uint16_t> scales;  // [n, q4_groups(k)] f16
    std::vector<uint8_t> zeros;    // [n, q4_groups(k)] zero codes; empty: symmetric (8)
    model::WeightTensor tensor;
};

// Packs codes[n, k] (the padding past k: code 8) as base/q4_layout.h describes: blocks of 512 columns
// (16 groups of 32) in 4 lines of 64 bytes; in line L byte 4 l + e holds elements 8 L + e (low nibble)
// and 8 L + 4 + e (high nibble) of the block's group l.
std::vector<uint8_t> pack(const std::vector<uint8_t>& codes, int64_t n, int64_t k) {
    const int64_t row_bytes = q4_row_bytes(k);
    std::vector<uint8_t> packed(static_cast<size_t>(n * row_bytes));
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t block = 0; block * 512 < k; ++block) {
            for (int64_t line = 0; line < 4; ++line) {
                for (int64_t group = 0; group < 16; ++group) {
                    for (int64_t e = 0; e < 4; ++e) {
                        const int64_t lo = block * 512 + group * 32 + line * 8 + e, hi = lo + 4;
                        const int code_lo = lo < k ? codes[j * k + lo] : kQ4ZeroCode;
                        const int code_hi = hi < k ? codes[j * k + hi] : kQ4ZeroCode;
                        packed[j * row_bytes + block * 256 + line * 64 + group * 4 + e] =
                            static_cast<uint8_t>(code_lo | (code_hi << 4));
                    }
                }
            }
        }
    }
    return packed;
}

// Symmetric (zero code 8) or with a random zero code per group, as GPTQ / AWQ checkpoints have.
Q4Weights random_q4_weights(int64_t n, int64_t k, uint32_t seed, bool asymmetric = false) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> code(0, 15);
    std::uniform_real_distribution<float> scale(-1e-2f, 1e-2f);  // Q4_0-style scales are often negative
    Q4Weights w;
    w.codes.resize(static_cast<size_t>(n * k));
    for (uint8_t& c : w.codes) c = static_cast<uint8_t>(code(rng));
    w.packed = pack(w.codes, n, k);
    const int64_t groups = q4_groups(k);
    w.scales.assign(static_cast<size_t>(n * groups), 0);
    for (int64_t j = 0; j < n; ++j)
        for (int64_t g = 0; g * kQ4Group < k; ++g) w.scales[j * groups + g] = f32_to_f16(scale(rng));
    w.tensor.data = w.packed.data();
    w.tensor.dtype = DType::kQ4;
    w.tensor.shape = {n, k};
    w.tensor.scales = {.data = w.scales.data(), .dtype = DType::kF16, .block_rows = 1, .block_cols = kQ4Group};
    if (asymmetric) {
        w.zeros.resize(w.scales.size());
        for (uint8_t& z : w.zeros) z = static_cast<uint8_t>(code(rng));
        w.tensor.scales.zeros = w.zeros.data();
    }
    return w;
}

// The reference and its bound: y[i, j] from the exact integer sums of each group, in double.
struct Reference {
    std::vector<double> y, bound;
};

Reference reference_q4(const std::vector<float>& x, int64_t m, int64_t k, const Q4Weights& w,
                       const std::vector<float>* bias) {
    const int64_t n = w.tensor.rows(), stride = int8_rows_stride(k), groups = q4_groups(k);
    Reference ref;
    ref.y.resize(static_cast<size_t>(m * n));
    ref.bound.resize(static_cast<size_t>(m * n));
    std::vector<uint8_t> codes(static_cast<size_t>(stride));
    for (int64_t i = 0; i < m; ++i) {
        float xs = 0.0f;
        quantize_row_int8(x.data() + i * k, k, codes.data(), &xs);
        for (int64_t j = 0; j < n; ++j) {
            double y = 0.0, magnitude = 0.0;
            for (int64_t g = 0; g < groups; ++g) {
                int64_t dot = 0, sum = 0;
                for (int64_t c = g * kQ4Group; c < std::min(k, (g + 1) * kQ4Group); ++c) {
                    dot += (int64_t{codes[c]} - 128) * w.codes[j * k + c];
                    sum += int64_t{codes[c]} - 128;
                }
                const double s = f16_to_f32(w.scales[j * groups + g]);
                const int64_t zero = w.zeros.empty() ? kQ4ZeroCode : w.zeros[j * groups + g];
                y += s * static_cast<double>(dot - zero * sum);
                magnitude += std::fabs(s) * (std::fabs(static_cast<double>(dot)) + zero * std::fabs(static_cast<double>(sum)));
            }
            ref.y[i * n + j] = xs * y + (bias ? (*bias)[j] : 0.0);
            ref.bound[i * n + j] = 4e-6 * xs * magnitude + (bias ? 1e-7 * std::fabs((*bias)[j]) : 0.0) + 1e-30;
        }
    }
    return ref;
}

void expect_near_reference(const std::vector<float>& y, const Reference& ref) {
    ASSERT_EQ(y.size(), ref.y.size());
    int failures = 0;
    for (size_t e = 0; e < y.size() && failures < 5; ++e) {
        if (!(std::fabs(y[e] - ref.y[e]) <= ref.bound[e])) {
            ++failures;
            ADD_FAILURE() << "element " << e << ": " << y[e] << " vs " << ref.y[e] << " (bound " << ref.bound[e] << ")";
        }
    }
}

// The activations for 4-bit weights: quantize_row_int8's codes (made signed) at the positions
// base/q4_layout.h gives (block b, plane t, group l, byte e: element 512 b + 32 l + 4 t + e at
// 512 b + 64 t + 4 l + e), zeros past k, and the sums of each group of 32.
TEST(QuantizeRowQ4x, CodesInTheWeightsLaneOrderAndGroupSums) {
    for (int64_t k : {1, 31, 32, 33, 127, 128, 129, 300, 512, 513, 1100}) {
        std::vector<float> x = testing::random_floats(static_cast<size_t>(k), static_cast<uint32_t>(k) + 7);
        std::vector<uint8_t> unsigned_codes(static_cast<size_t>(int8_rows_stride(k)));
        float want_scale = 0.0f;
        quantize_row_int8(x.data(), k, unsigned_codes.data(), &want_scale);
        const int64_t padded = (k + 511) / 512 * 512;
        ASSERT_EQ(q4_padded(k), padded);
        std::vector<uint8_t> codes(static_cast<size_t>(padded), 0xaa);
        std::vector<float> sums(static_cast<size_t>(padded / 32), NAN);
        float scale = 0.0f;
        quantize_row_q4x(x.data(), k, codes.data(), &scale, sums.data());
        EXPECT_EQ(scale, want_scale);
        for (int64_t c = 0; c < padded; ++c) {
            const int64_t b = c / 512, l = (c % 512) / 32, t = (c % 32) / 4, e = c % 4;
            const int want = c < k ? int{unsigned_codes[c]} - 128 : 0;
            ASSERT_EQ(static_cast<int8_t>(codes[b * 512 + t * 64 + l * 4 + e]), want) << "k=" << k << " c=" << c;
        }
        for (int64_t g = 0; g < padded / 32; ++g) {
            int sum = 0;
            for (int64_t c = g * 32; c < std::min(k, (g + 1) * 32); ++c) sum += int{unsigned_codes[c]} - 128;
            EXPECT_EQ(sums[g], static_cast<float>(sum)) << "k=" << k << " group " << g;
        }
    }
}

class LinearQ4Test : public ForcedLevelTest {
protected:
    void SetUp() override {
        ForcedLevelTest::SetUp();
        if (IsSkipped()) return;
        std::printf("level %s: 4-bit path %s\n", std::string(simd_level_name(active_simd_level())).c_str(),
                    active_kernels().linear_q4_path);
    }
};

TEST_P(LinearQ4Test, MatchesTheGroupwiseIntegerReference) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (int threads : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(threads));
    struct Shape {
        int64_t m, k, n;
    };
    std::vector<Shape> shapes = {{1, 1, 1}, {1, 31, 3}, {1, 32, 9}, {2, 33, 7}, {3, 127, 9}, {1, 128, 17},
                                 {4, 129, 67}, {5, 255, 1}, {1, 2048, 129}, {2, 4097, 20}, {1, 8195, 37},
                                 {9, 1000, 65}, {17, 333, 130}, {40, 200, 33}, {111, 96, 70}};
    uint32_t seed = 1;
    int case_index = 0;
    for (const Shape& s : shapes) {
        SCOPED_TRACE(::testing::Message() << "m=" << s.m << " k=" << s.k << " n=" << s.n);
        std::vector<float> x = testing::random_floats(static_cast<size_t>(s.m * s.k), seed++);
        if (s.m > 2) std::fill(x.begin() + s.k, x.begin() + 2 * s.k, 0.0f);  // a zero row
        for (bool asymmetric : {false, true}) {
            SCOPED_TRACE(asymmetric ? "zero code per group" : "symmetric");
            const Q4Weights w = random_q4_weights(s.n, s.k, seed++, asymmetric);
            std::vector<float> y(static_cast<size_t>(s.m * s.n), NAN);
            linear(x.data(), s.m, w.tensor, nullptr, y.data(), *pools[static_cast<size_t>(case_index++ % 3)]);
            expect_near_reference(y, reference_q4(x, s.m, s.k, w, nullptr));
        }
    }
}

// Every code at an extreme (0 and 15), activations at +-amax: the group sums at their largest, and
// the result known in closed form (all rows of x equal, so the codes are +-127).
TEST_P(LinearQ4Test, ExtremeCodesGiveTheClosedForm) {
    ThreadPool pool(2);
    const int64_t k = 4096 + 32, n = 3;
    Q4Weights w = random_q4_weights(n, k, 9);
    for (int64_t c = 0; c < k; ++c) {
        w.codes[c] = 15;
        w.codes[k + c] = 0;
        w.codes[2 * k + c] = c % 2 ? 15 : 0;
    }
    w.packed = pack(w.codes, n, k);
    w.tensor.data = w.packed.data();
    const uint16_t one = f32_to_f16(1.0f);
    std::fill(w.scales.begin(), w.scales.end(), uint16_t{0});
    for (int64_t j = 0; j < n; ++j)
        for (int64_t g = 0; g < k / kQ4Group; ++g) w.scales[j * q4_groups(k) + g] = one;
    std::vector<float> x(static_cast<size_t>(2 * k), 1.0f);
    std::fill(x.begin() + k, x.end(), -1.0f);
    std::vector<float> y(static_cast<size_t>(2 * n), NAN);
    linear(x.data(), 2, w.tensor, nullptr, y.data(), pool);
    const float xs = 1.0f / 127.0f;
    // Row 0: (15 - 8) * 127 per element; row 1: (0 - 8) * 127; row 2: alternately -8 and 7, so -127 / 2 per element.
    const double want[3] = {7.0 * 127 * k, -8.0 * 127 * k, -0.5 * 127 * k};
    for (int64_t j = 0; j < n; ++j) {
        EXPECT_NEAR(y[j], xs * want[j], 1e-6 * std::fabs(xs * want[j])) << "row " << j;
        EXPECT_NEAR(y[n + j], -xs * want[j], 1e-6 * std::fabs(xs * want[j])) << "row " << j << ", x negated";
    }
}

TEST_P(LinearQ4Test, FusedOutputsWithBiasesEachMatchTheirReference) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (int threads : {1, 2, 5}) pools.push_back(std::make_unique<ThreadPool>(threads));
    const std::vector<int64_t> rows = {64, 5, 100, 1};
    uint32_t seed = 50;
    for (int64_t m : {1, 3, 40}) {
        const int64_t k = 161;
        std::vector<float> x = testing::random_floats(static_cast<size_t>(m * k), seed++);
        std::vector<Q4Weights> weights;
        std::vector<testing::StoredWeights> biases;
        std::vector<std::vector<float>> bias_values;
        for (int64_t r : rows) {
            weights.push_back(random_q4_weights(r, k, seed++, r % 2 == 1));
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
                SCOPED_TRACE(::testing::Message() << "output " << o);
                expect_near_reference(ys[o], reference_q4(x, m, k, weights[o], o % 2 == 1 ? &bias_values[o] : nullptr));
            }
        }
    }
}

// Act-order weights (QuantScales::input_order): column c of the codes multiplies x[order[c]], so the
// result is the reference on x with its columns gathered in that order; fused outputs share the order.
TEST_P(LinearQ4Test, InputOrderGathersTheActivations) {
    ThreadPool pool(2);
    uint32_t seed = 300;
    for (int64_t m : {1, 5, 33}) {
        const int64_t k = 160;
        SCOPED_TRACE(::testing::Message() << "m=" << m);
        std::vector<int32_t> order(static_cast<size_t>(k));
        for (int64_t c = 0; c < k; ++c) order[c] = static_cast<int32_t>((c * 37 + 11) % k);  // 37 is prime to 160
        const std::vector<float> x = testing::random_floats(static_cast<size_t>(m * k), seed++);
        std::vector<float> gathered(x.size());
        for (int64_t i = 0; i < m; ++i)
            for (int64_t c = 0; c < k; ++c) gathered[i * k + c] = x[i * k + order[c]];
        Q4Weights a = random_q4_weights(48, k, seed++, true), b = random_q4_weights(17, k, seed++);
        a.tensor.scales.input_order = b.tensor.scales.input_order = order.data();
        std::vector<float> ya(static_cast<size_t>(m * 48), NAN), yb(static_cast<size_t>(m * 17), NAN);
        const LinearOutput outputs[] = {{&a.tensor, nullptr, ya.data()}, {&b.tensor, nullptr, yb.data()}};
        linear_fused(x.data(), m, outputs, pool);
        expect_near_reference(ya, reference_q4(gathered, m, k, a, nullptr));
        expect_near_reference(yb, reference_q4(gathered, m, k, b, nullptr));
        // And not the reference on x as it is (the order matters).
        const Reference unordered = reference_q4(x, m, k, a, nullptr);
        double moved = 0.0;
        for (size_t e = 0; e < ya.size(); ++e) moved = std::max(moved, std::fabs(ya[e] - unordered.y[e]));
        EXPECT_GT(moved, 1e-3);
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, LinearQ4Test, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_test_name);

}  // namespace
}  // namespace hichat::cpu
