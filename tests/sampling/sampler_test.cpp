#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace hichat::sampling {
namespace {

// Logits whose softmax at temperature 1 is exactly `probs`.
std::vector<float> logits_for(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

std::map<int32_t, int> histogram(const SamplingParams& params, const std::vector<double>& probs, int draws) {
    Sampler sampler(params, 7);
    std::map<int32_t, int> h;
    for (int i = 0; i < draws; ++i) {
        auto l = logits_for(probs);
        h[sampler.sample(l, {}, {})]++;
    }
    return h;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIndexOnTies) {
    SamplingParams p;
    p.temperature = 0;
    Sampler s(p, 1);
    std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f};
    EXPECT_EQ(s.sample(l, {}, {}), 1);
}

TEST(Sampler, FrequenciesFollowSoftmax) {
    const std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
    const int draws = 40000;
    auto h = histogram(SamplingParams{}, probs, draws);
    for (size_t t = 0; t < probs.size(); ++t) {
        double expected = probs[t] * draws;
        double sd = std::sqrt(draws * probs[t] * (1 - probs[t]));
        EXPECT_NEAR(h[static_cast<int32_t>(t)], expected, 5 * sd) << "token " << t;
    }
}

TEST(Sampler, TemperatureSharpens) {
    SamplingParams p;
    p.temperature = 0.5f;  // probs squared, renormalised: 0.25/0.34, 0.09/0.34, ...
    auto h = histogram(p, {0.5, 0.3, 0.15, 0.05}, 40000);
    double expected0 = 0.25 / (0.25 + 0.09 + 0.0225 + 0.0025) * 40000;
    EXPECT_NEAR(h[0], expected0, 500);
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
    SamplingParams p;
    p.top_k = 2;
    auto h = histogram(p, {0.1, 0.5, 0.3, 0.1}, 20000);
    EXPECT_EQ(h.count(0) + h.count(3), 0u);
    EXPECT_NEAR(h[1] / 20000.0, 0.5 / 0.8, 0.02);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
    SamplingParams p;
    p.top_p = 0.7f;
    auto h = histogram(p, {0.5, 0.3, 0.15, 0.05}, 20000);
    EXPECT_EQ(h.count(2) + h.count(3), 0u);
    EXPECT_GT(h[1], 0);
    EXPECT_NEAR(h[0] / 20000.0, 0.5 / 0.8, 0.02);
}

TEST(Sampler, TopPOverALargeVocabularyFallsBackToAFullSort) {
    // 5000 equally likely tokens: top_p 0.9 needs 4500 of them (the lowest ids: ties go by id), more
    // than the 2048 the partial sort holds. 4000 draws from the 4500 give about 2650 distinct tokens,
    // so more than 2048 of them shows the full sort's set; 20,000 draws took 160 s under the sanitizers.
    SamplingParams p;
    p.top_p = 0.9f;
    Sampler s(p, 3);
    std::map<int32_t, int> h;
    for (int i = 0; i < 4000; ++i) {
        std::vector<float> l(5000, 0.0f);   // sample() may change its logits
        h[s.sample(l, {}, {})]++;
    }
    EXPECT_GT(h.size(), 2048u);
    EXPECT_GE(h.rbegin()->first, 2048) << "tokens past the partial sort's 2048 are drawn";
    for (const auto& [t, n] : h) ASSERT_LT(t, 4500) << "tokens past the top-p set must never appear";
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheMostLikely) {
    SamplingParams p;
    p.min_p = 0.5f;  // threshold 0.25
    auto h = histogram(p, {0.5, 0.3, 0.15, 0.05}, 20000);
    EXPECT_EQ(h.count(2) + h.count(3), 0u);
    EXPECT_GT(h[1], 0);
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
    auto run = [](uint64_t seed) {
        SamplingParams p;
        p.seed = seed;
        Sampler s(p, 999);
        std::vector<int32_t> out;
        for (int i = 0; i < 64; ++i) {
            std::vector<float> l(100);
            for (size_t j = 0; j < l.size(); ++j) l[j] = static_cast<float>(std::sin(j * 0.37 + i));
            out.push_back(s.sample(l, {}, {}));
        }
        return out;
    };
    EXPECT_EQ(run(42), run(42));
    EXPECT_NE(run(42), run(43));
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
    SamplingParams p;
    p.temperature = 0;
    p.repetition_penalty = 2.0f;
    Sampler s(p, 1);
    std::vector<float> l = {4.0f, 3.0f, -1.0f};
    std::vector<int32_t> prompt = {0, 2, 0};
    EXPECT_EQ(s.sample(l, prompt, {}), 1);  // 4 -> 2 falls below 3
    EXPECT_FLOAT_EQ(l[0], 2.0f);            // penalised once although it appears twice
    EXPECT_FLOAT_EQ(l[2], -2.0f);
    EXPECT_FLOAT_EQ(l[1], 3.0f);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesCountGeneratedTokensOnly) {
    SamplingParams p;
    p.temperature = 0;
    p.presence_penalty = 0.5f;
    p.frequency_penalty = 0.25f;
    Sampler s(p, 1);
    std::vector<float> l = {1.0f, 1.0f, 1.0f};
    std::vector<int32_t> prompt = {2, 2, 2};
    std::vector<int32_t> generated = {0, 0, 1};
    s.sample(l, prompt, generated);
    EXPECT_FLOAT_EQ(l[0], 1.0f - 0.5f - 0.5f);
    EXPECT_FLOAT_EQ(l[1], 1.0f - 0.5f - 0.25f);
    EXPECT_FLOAT_EQ(l[2], 1.0f);
}

TEST(Sampler, DeviceSamplableOnlyWithoutPenalties) {
    SamplingParams p;
    EXPECT_TRUE(Sampler(p, 1).device_samplable());
    p.temperature = 0;   // greedy: the device takes the argmax
    p.top_k = 5;
    p.top_p = 0.5f;
    p.min_p = 0.1f;
    EXPECT_TRUE(Sampler(p, 1).device_samplable());
    SamplingParams rep;
    rep.repetition_penalty = 1.1f;
    EXPECT_FALSE(Sampler(rep, 1).device_samplable());
    SamplingParams presence;
    presence.presence_penalty = -0.5f;
    EXPECT_FALSE(Sampler(presence, 1).device_samplable());
    SamplingParams frequency;
    frequency.frequency_penalty = 0.25f;
    EXPECT_FALSE(Sampler(frequency, 1).device_samplable());
}

TEST(Sampler, DeviceSamplableOnlyWithoutLogitBias) {
    SamplingParams p;
    p.logit_bias = {{.token = 2, .bias = 5.0f}};
    EXPECT_FALSE(Sampler(p, 1).device_samplable());
    p.temperature = 0;
    EXPECT_FALSE(p.is_plain_greedy()) << "a biased greedy row needs the host logits, not the argmax";
}

// -100 bans a token, +100 forces it, a moderate bias shifts its probability as exp(bias); the bias
// comes before temperature and top-k (a biased token can enter the top k), and ids outside the
// vocabulary are ignored.
TEST(Sampler, LogitBiasBansForcesAndShifts) {
    SamplingParams greedy;
    greedy.temperature = 0;
    greedy.logit_bias = {{.token = 1, .bias = -100.0f}};
    std::vector<float> l = {0.1f, 3.0f, 2.0f, -1.0f};
    EXPECT_EQ(Sampler(greedy, 1).sample(l, {}, {}), 2) << "the argmax is banned";

    SamplingParams forced;
    forced.temperature = 2.0f;
    forced.logit_bias = {{.token = 3, .bias = 100.0f}};
    auto h = histogram(forced, {0.7, 0.1, 0.1, 0.1}, 2000);
    EXPECT_EQ(h[3], 2000) << "forced at temperature 2";

    SamplingParams banned;
    banned.logit_bias = {{.token = 0, .bias = -100.0f}, {.token = 99, .bias = 100.0f}};
    h = histogram(banned, {0.97, 0.01, 0.01, 0.01}, 5000);
    EXPECT_EQ(h.count(0), 0u);
    EXPECT_EQ(h[1] + h[2] + h[3], 5000) << "token 99 is outside the vocabulary: ignored";

    SamplingParams shifted;  // p1 * e^ln3 = 3 * 0.25 against 0.25 + 0.25 + 0.25
    shifted.logit_bias = {{.token = 1, .bias = std::log(3.0f)}};
    h = histogram(shifted, {0.25, 0.25, 0.25, 0.25}, 40000);
    EXPECT_NEAR(h[1], 0.5 * 40000, 5 * std::sqrt(40000 * 0.25));

    SamplingParams top1;
    top1.top_k = 1;
    top1.logit_bias = {{.token = 3, .bias = 10.0f}};
    h = histogram(top1, {0.7, 0.1, 0.1, 0.1}, 100);
    EXPECT_EQ(h[3], 100) << "biased before top-k";
}

TEST(Sampler, NextUnitDrawsTheSequenceRngFromItsSeed) {
    SamplingParams p;
    p.seed = 42;
    Sampler seeded(p, 999);
    Sampler unseeded(SamplingParams{}, 999);   // falls back to the given seed
    Rng ref42(42), ref999(999);
    for (int i = 0; i < 100; ++i) {
        const double u = seeded.next_unit();
        EXPECT_EQ(u, ref42.next_unit());
        EXPECT_GE(u, 0.0);
        EXPECT_LT(u, 1.0);
        EXPECT_EQ(unseeded.next_unit(), ref999.next_unit());
    }
}

TEST(Sampler, SampleAndNextUnitShareOneStream) {
    SamplingParams p;
    p.seed = 7;
    std::vector<float> logits = {0.1f, 0.2f, 0.3f};
    Sampler a(p, 0), b(p, 0);
    a.sample(logits, {}, {});   // one draw per non-greedy step
    b.next_unit();
    EXPECT_EQ(a.next_unit(), b.next_unit());

    p.temperature = 0;          // greedy steps draw nothing
    Sampler greedy(p, 0);
    Rng ref(7);
    greedy.sample(logits, {}, {});
    EXPECT_EQ(greedy.next_unit(), ref.next_unit());
}

TEST(SamplingParams, ValidateNamesTheField) {
    SamplingParams p;
    EXPECT_TRUE(p.validate().ok());
    p.temperature = NAN;
    EXPECT_NE(p.validate().message().find("temperature"), std::string::npos);
    p = {};
    p.temperature = -1;
    EXPECT_FALSE(p.validate().ok());
    p = {};
    p.top_p = 0;
    EXPECT_NE(p.validate().message().find("top_p"), std::string::npos);
    p = {};
    p.top_k = -3;
    EXPECT_NE(p.validate().message().find("top_k"), std::string::npos);
    p = {};
    p.min_p = 1.5f;
    EXPECT_NE(p.validate().message().find("min_p"), std::string::npos);
    p = {};
    p.frequency_penalty = 3;
    EXPECT_NE(p.validate().message().find("frequency_penalty"), std::string::npos);
    p = {};
    p.logit_bias = {{.token = 1, .bias = 101.0f}};
    EXPECT_NE(p.validate().message().find("logit_bias"), std::string::npos);
    p.logit_bias = {{.token = -1, .bias = 1.0f}};
    EXPECT_NE(p.validate().message().find("logit_bias"), std::string::npos);
    p.logit_bias = {{.token = 7, .bias = -100.0f}};
    EXPECT_TRUE(p.validate().ok());
}

}  // namespace
}  // namespace hichat::sampling
