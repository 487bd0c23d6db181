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

namespace hichat::cuda::testing {
namespace {

class TokenBitmaskTest : public CudaTest {};

// Against the obvious loop: masked rows lose exactly their zero bits; unmasked rows keep everything.
TEST_F(TokenBitmaskTest, DisallowedLogitsBecomeMinusInfinity) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    for (int vocab : {1, 31, 32, 33, 1000, 128256}) {
        const int rows = 5, words = (vocab + 31) / 32 + 1;  // one spare word: masks may be wider
        std::vector<float> logits = random_floats(rng, static_cast<size_t>(rows) * vocab, -5, 5);
        std::vector<uint32_t> masks(static_cast<size_t>(3) * words);
        for (size_t i = 0; i < masks.size(); ++i) {
            masks[i] = i % 7 == 0 ? 0xffffffffu : i % 5 == 0 ? 0u : static_cast<uint32_t>(rng());
        }
        const std::vector<int32_t> mask_of_row = {2, -1, 0, 1, 0};
        DeviceBuffer d_logits = upload(logits), d_masks = upload(masks), d_rows = upload(mask_of_row);
        CUDA_CHECK(apply_token_bitmask(static_cast<float*>(d_logits.data()), rows, vocab,
                                       static_cast<const uint32_t*>(d_masks.data()), words,
                                       static_cast<const int32_t*>(d_rows.data()), nullptr));
        const std::vector<float> got = download<float>(d_logits, logits.size());
        for (int r = 0; r < rows; ++r) {
            for (int i = 0; i < vocab; ++i) {
                const size_t at = static_cast<size_t>(r) * vocab + i;
                const int m = mask_of_row[r];
                const bool allowed = m < 0 || (masks[static_cast<size_t>(m) * words + i / 32] >> (i % 32) & 1u);
                if (allowed) {
                    ASSERT_EQ(got[at], logits[at]) << "vocab " << vocab << " row " << r << " token " << i;
                } else {
                    ASSERT_EQ(got[at], -kInf) << "vocab " << vocab << " row " << r << " token " << i;
                }
            }
        }
    }
    EXPECT_EQ(apply_token_bitmask(nullptr, 0, 10, nullptr, 1, nullptr, nullptr), cudaSuccess);
    EXPECT_EQ(apply_token_bitmask(nullptr, 1, 64, nullptr, 1, nullptr, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda::testing
