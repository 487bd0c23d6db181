// cuda::row_logprobs against sampling::compute_logprobs (the CPU's rule) on awkward vocabularies and
// rows: exact ties, NaN, -inf and +inf, fewer finite tokens than asked for.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cuda/ops.h"
#include "cuda_test_util.h"
#include "sampling/logprobs.h"

namespace hichat::cuda::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

class RowLogprobsTest : public CudaTest {};

TEST_F(RowLogprobsTest, MatchesTheCpuRule) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (int vocab : {1, 3, 255, 256, 1001, 32001, 128256}) {
        const int rows = 9;
        std::vector<float> logits(static_cast<size_t>(rows) * vocab);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (int r = 0; r < rows; ++r) {
            float* row = logits.data() + static_cast<size_t>(r) * vocab;
            for (int i = 0; i < vocab; ++i) {
                const float z = normal(rng);
                row[i] = r % 3 == 2 ? std::round(z * 2) / 2 : z;  // quantised rows: many exact ties
            }
            if (r == 3) for (int n = 0; n < 3; ++n) row[rng() % vocab] = NAN;
            if (r == 4) for (int n = 0; n < 5; ++n) row[rng() % vocab] = -kInf;
            if (r == 5) row[rng() % vocab] = kInf;
            if (r == 6) {  // one finite token
                for (int i = 0; i < vocab; ++i) row[i] = -kInf;
                row[rng() % vocab] = -3.0f;
            }
            if (r == 7) for (int i = 0; i < vocab; ++i) row[i] = i % 2 ? -kInf : NAN;
        }
        std::vector<int32_t> chosen(rows);
        for (int32_t& c : chosen) c = static_cast<int32_t>(rng() % static_cast<unsigned>(vocab));
        for (int num_top : {0, 1, 5, 20}) {
            DeviceBuffer d_logits = upload(logits), d_chosen = upload(chosen);
            DeviceBuffer d_out(rows * sizeof(RowLogprobsOut));
            CUDA_CHECK(row_logprobs(static_cast<const float*>(d_logits.data()), rows, vocab,
                                    static_cast<const int32_t*>(d_chosen.data()), num_top,
                                    static_cast<RowLogprobsOut*>(d_out.data()), nullptr));
            CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<RowLogprobsOut> got(rows);
            CUDA_CHECK(cudaMemcpy(got.data(), d_out.data(), rows * sizeof(RowLogprobsOut), cudaMemcpyDeviceToHost));
            for (int r = 0; r < rows; ++r) {
                SCOPED_TRACE("vocab " + std::to_string(vocab) + " row " + std::to_string(r) + " top " +
                             std::to_string(num_top));
                const std::span<const float> row(logits.data() + static_cast<size_t>(r) * vocab, vocab);
                const sampling::TokenLogprobs want = sampling::compute_logprobs(row, chosen[r], num_top);
                // NaN only where the chosen token's own logit is NaN (no sampler picks one): both say NaN.
                auto near = [](float a, float b) {
                    return (std::isinf(a) && a == b) || (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-4f;
                };
                EXPECT_TRUE(near(got[r].chosen, want.chosen)) << got[r].chosen << " vs " << want.chosen;
                ASSERT_EQ(got[r].num_top, want.num_top);
                for (int k = 0; k < want.num_top; ++k) {
                    EXPECT_EQ(got[r].top_ids[k], want.top_ids[k]) << "rank " << k;
                    EXPECT_TRUE(near(got[r].top_logprobs[k], want.top_logprobs[k])) << "rank " << k;
                }
            }
        }
    }
}

TEST_F(RowLogprobsTest, BadSizesAreErrorsAndNoRowsIsANoOp) {
    EXPECT_EQ(row_logprobs(nullptr, 0, 10, nullptr, 5, nullptr, nullptr), cudaSuccess);
    EXPECT_EQ(row_logprobs(nullptr, 1, 10, nullptr, 21, nullptr, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(row_logprobs(nullptr, 1, 0, nullptr, 1, nullptr, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda::testing
