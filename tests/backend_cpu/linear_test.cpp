// linear() against a double-precision reference, for every dtype, SIMD level, awkward shape and a few
// thread counts (both the GEMV path for small m and the GEMM path for large m).
#include <cmath>
#include <memory>

#include "backend/cpu/ops.h"
#include "op_test_util.h"

namespace hichat::cpu {
namespace {

using testing::ForcedLevelTest;

struct LinearShape {
    int64_t m, k, n;
};

std::vector<LinearShape> linear_shapes() {
    std::vector<LinearShape> shapes = {{1, 1, 1}, {1, 16, 1}, {3, 31, 2}, {2, 17, 97}};
    for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17}) {
        shapes.push_back({m, 65, 333});
        shapes.push_back({m, 1000, 67});
    }
    for (int64_t m : {5, 6, 8, 12, 16}) shapes.push_back({m, 3001, 37});  // long rows
    for (int64_t m : {1, 3}) {  // GEMV rows longer than 4096 (as the down projection's), odd tails
        shapes.push_back({m, 4097, 20});
        shapes.push_back({m, 8195, 37});
    }
    for (LinearShape s : {LinearShape{19, 1000, 333}, {111, 333, 1000}, {989, 65, 129}, {989, 257, 40}})
        shapes.push_back(s);
    return shapes;
}

// y[i, j] = sum_k x[i, k] w[j, k] + bias[j], in double.
std::vector<double> reference_linear(const std::vector<float>& x, const std::vector<double>& w,
                                     const std::vector<double>* bias, LinearShape s) {
    std::vector<double> y(static_cast<size_t>(s.m * s.n));
    for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
            double acc = bias ? (*bias)[j] : 0.0;
            for (int64_t t = 0; t < s.k; ++t) acc += double{x[i * s.k + t]} * w[j * s.k + t];
            y[i * s.n + j] = acc;
        }
    return y;
}

// The bound per unit of sum |x||w|: fp32 accumulation, plus, where bf16 weights meet vdpbf16ps
// (avx512_bf16), the activations' split into two bf16 terms (|x - hi - lo| <= 2^-16 |x|).
double elementwise_bound(DType w_dtype) {
    const bool bf16_terms = active_simd_level() == SimdLevel::kAvx512Bf16 && w_dtype == DType::kBF16;
    return bf16_terms ? 0x1p-16 + 1e-6 : 1e-6;
}

// ||y - want|| / ||want||: 3e-5 with the bf16 split (its errors are independent across a dot product, so
// random data stays far under the elementwise worst case), 1e-5 without.
double relative_bound(DType w_dtype) { return elementwise_bound(w_dtype) > 1e-5 ? 3e-5 : 1e-5; }

// Every element within elementwise_bound(dtype) of sum |x||w| over its dot product.
void expect_close_elementwise(const std::vector<float>& got, const std::vector<double>& want,
                              const std::vector<float>& x, const std::vector<double>& w, LinearShape s,
                              DType w_dtype) {
    const double bound = elementwise_bound(w_dtype);
    for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
            double magnitude = 0.0;
            for (int64_t t = 0; t < s.k; ++t) magnitude += std::abs(double{x[i * s.k + t]} * w[j * s.k + t]);
            double err = std::abs(got[i * s.n + j] - want[i * s.n + j]);
            ASSERT_LE(err, bound * (magnitude + 1.0)) << "at y[" << i << ", " << j << "]";
        }
}

class LinearTest : public ForcedLevelTest {};

TEST_P(LinearTest, MatchesDoubleReference) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (int threads : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(threads));
    uint32_t seed = 1;
    int case_index = 0;
    for (LinearShape s : linear_shapes()) {
        std::vector<float> x = testing::random_floats(static_cast<size_t>(s.m * s.k), seed++);
        std::vector<float> w_src = testing::random_floats(static_cast<size_t>(s.n * s.k), seed++, 0.1f);
        for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
            SCOPED_TRACE(::testing::Message() << "m=" << s.m << " k=" << s.k << " n=" << s.n << " dtype="
                                              << dtype_name(dtype));
            testing::StoredWeights w = testing::store_weights(w_src, dtype, {s.n, s.k});
            std::vector<double> want = reference_linear(x, w.values, nullptr, s);
            std::vector<float> y(static_cast<size_t>(s.m * s.n), NAN);
            ThreadPool& pool = *pools[static_cast<size_t>(case_index++ % 3)];
            linear(x.data(), s.m, w.tensor, nullptr, y.data(), pool);
            EXPECT_LT(testing::relative_error(y, want), relative_bound(dtype));
            expect_close_elementwise(y, want, x, w.values, s, dtype);
        }
    }
}

TEST_P(LinearTest, AddsBiasOfEachDtype) {
    ThreadPool pool(2);
    for (LinearShape s : {LinearShape{1, 70, 45}, {5, 33, 100}, {40, 129, 77}}) {
        std::vector<float> x = testing::random_floats(static_cast<size_t>(s.m * s.k), 7);
        testing::StoredWeights w =
            testing::store_weights(testing::random_floats(static_cast<size_t>(s.n * s.k), 8), DType::kBF16, {s.n, s.k});
        for (DType bias_dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
            testing::StoredWeights bias =
                testing::store_weights(testing::random_floats(static_cast<size_t>(s.n), 9, 3.0f), bias_dtype, {s.n});
            std::vector<double> want = reference_linear(x, w.values, &bias.values, s);
            std::vector<float> y(static_cast<size_t>(s.m * s.n));
            linear(x.data(), s.m, w.tensor, &bias.tensor, y.data(), pool);
            EXPECT_LT(testing::relative_error(y, want), relative_bound(DType::kBF16))
                << "m=" << s.m << " " << dtype_name(bias_dtype);
        }
    }
}

TEST_P(LinearTest, AbsentBiasIsIgnored) {
    ThreadPool pool(2);
    LinearShape s{3, 40, 20};
    std::vector<float> x = testing::random_floats(static_cast<size_t>(s.m * s.k), 3);
    testing::StoredWeights w =
        testing::store_weights(testing::random_floats(static_cast<size_t>(s.n * s.k), 4), DType::kF32, {s.n, s.k});
    model::WeightTensor absent;  // data == nullptr
    std::vector<float> y(static_cast<size_t>(s.m * s.n));
    linear(x.data(), s.m, w.tensor, &absent, y.data(), pool);
    EXPECT_LT(testing::relative_error(y, reference_linear(x, w.values, nullptr, s)), 1e-5);
}

// linear_fused() splits the outputs' rows end to end over the threads: every split point (inside
// an output, at a boundary, a thread with none of an output) must give each output its own linear().
TEST_P(LinearTest, FusedOutputsEachMatchTheirReference) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (int threads : {1, 2, 3, 5}) pools.push_back(std::make_unique<ThreadPool>(threads));
    const std::vector<std::vector<int64_t>> output_rows = {{64, 16, 16}, {37, 5, 100}, {1, 300}, {200, 3, 1, 33}};
    uint32_t seed = 100;
    for (int64_t m : {1, 3, 40}) {  // GEMV, GEMV over several rows, GEMM
        for (const std::vector<int64_t>& rows : output_rows) {
            const int64_t k = 97;
            std::vector<float> x = testing::random_floats(static_cast<size_t>(m * k), seed++);
            std::vector<testing::StoredWeights> weights, biases;
            for (size_t o = 0; o < rows.size(); ++o) {
                weights.push_back(testing::store_weights(
                    testing::random_floats(static_cast<size_t>(rows[o] * k), seed++, 0.1f), DType::kBF16, {rows[o], k}));
                biases.push_back(testing::store_weights(testing::random_floats(static_cast<size_t>(rows[o]), seed++),
                                                        DType::kF32, {rows[o]}));
            }
            for (auto& pool : pools) {
                SCOPED_TRACE(::testing::Message() << "m=" << m << " outputs=" << rows.size()
                                                  << " threads=" << pool->num_threads());
                std::vector<std::vector<float>> ys;
                std::vector<LinearOutput> outputs;
                for (size_t o = 0; o < rows.size(); ++o) ys.emplace_back(static_cast<size_t>(m * rows[o]), NAN);
                for (size_t o = 0; o < rows.size(); ++o)  // odd outputs with a bias
                    outputs.push_back({&weights[o].tensor, o % 2 == 1 ? &biases[o].tensor : nullptr, ys[o].data()});
                linear_fused(x.data(), m, outputs, *pool);
                for (size_t o = 0; o < rows.size(); ++o) {
                    const LinearShape s{m, k, rows[o]};
                    std::vector<double> want =
                        reference_linear(x, weights[o].values, o % 2 == 1 ? &biases[o].values : nullptr, s);
                    EXPECT_LT(testing::relative_error(ys[o], want), relative_bound(DType::kBF16)) << "output " << o;
                    expect_close_elementwise(ys[o], want, x, weights[o].values, s, DType::kBF16);
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Levels, LinearTest, ::testing::ValuesIn(testing::all_levels()),
                         testing::level_test_name);

}  // namespace
}  // namespace hichat::cpu
