// compute_logprobs against a brute-force log-softmax and a full sort.
#include "sampling/logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace hichat::sampling {
namespace {

TEST(Logprobs, MatchesLogSoftmaxAndAFullSort) {
    std::mt19937 rng(7);
    for (int vocab : {1, 2, 5, 21, 1000, 32001}) {
        std::normal_distribution<float> dist(0, 3);
        std::vector<float> logits(static_cast<size_t>(vocab));
        for (float& v : logits) v = std::round(dist(rng) * 4) / 4;  // quarter steps: many exact ties
        double mx = *std::max_element(logits.begin(), logits.end()), sum = 0;
        for (float v : logits) sum += std::exp(v - mx);
        const double lse = mx + std::log(sum);
        std::vector<int32_t> order(static_cast<size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
        for (int k : {0, 1, 5, 20, 25}) {
            const int32_t chosen = static_cast<int32_t>(rng() % static_cast<unsigned>(vocab));
            const TokenLogprobs lp = compute_logprobs(logits, chosen, k);
            EXPECT_NEAR(lp.chosen, logits[chosen] - lse, 1e-5) << vocab;
            ASSERT_EQ(lp.num_top, std::min({k, vocab, kMaxTopLogprobs})) << vocab << " " << k;
            for (int i = 0; i < lp.num_top; ++i) {
                EXPECT_EQ(lp.top_ids[i], order[i]) << "vocab " << vocab << " rank " << i;
                EXPECT_NEAR(lp.top_logprobs[i], logits[order[i]] - lse, 1e-5);
            }
        }
    }
}

TEST(Logprobs, MinusInfinityAndNan) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> logits{-inf, 1.0f, std::nanf(""), 1.0f, -inf};
    const TokenLogprobs lp = compute_logprobs(logits, 0, 5);
    EXPECT_EQ(lp.chosen, -inf);
    ASSERT_EQ(lp.num_top, 4) << "NaN is never listed";
    EXPECT_EQ(lp.top_ids[0], 1);
    EXPECT_EQ(lp.top_ids[1], 3);
    EXPECT_NEAR(lp.top_logprobs[0], std::log(0.5), 1e-6);
    const std::vector<float> none{-inf, -inf};
    EXPECT_EQ(compute_logprobs(none, 1, 1).chosen, -inf);
}

}  // namespace
}  // namespace hichat::sampling
