// StepCostModel: recovers a known linear cost from observed steps, never predicts less for more work,
// and follows a change of machine speed (forgetting).
#include "scheduler/step_cost_model.h"

#include <gtest/gtest.h>

#include <random>

namespace hichat::scheduler {
namespace {

// A made-up machine: 3 ms per step, 0.04 ms per prefill token, 0.05 per decode row, 20 ns per decode
// key, 1 ns per prefill query-key pair.
double machine_ms(const StepFeatures& f, double speed = 1.0) {
    return speed * (3.0 + 0.04 * f.prefill_tokens + 0.05 * f.decode_rows + 2e-5 * f.decode_keys +
                    1e-6 * f.prefill_key_pairs);
}

StepFeatures random_step(std::mt19937& rng) {
    StepFeatures f;
    const int rows = std::uniform_int_distribution<int>(0, 64)(rng);
    for (int i = 0; i < rows; ++i) f += chunk_features(std::uniform_int_distribution<int>(0, 4000)(rng), 1);
    if (rng() % 2 == 0 || rows == 0) {
        f += chunk_features(std::uniform_int_distribution<int>(0, 3000)(rng), std::uniform_int_distribution<int>(2, 512)(rng));
    }
    return f;
}

TEST(StepFeatures, ChunksCountDecodesAndCausalPairs) {
    const StepFeatures d = chunk_features(99, 1);
    EXPECT_EQ(d.decode_rows, 1);
    EXPECT_EQ(d.decode_keys, 100);
    EXPECT_EQ(d.prefill_tokens, 0);
    const StepFeatures p = chunk_features(10, 4);   // queries see 11, 12, 13, 14 keys
    EXPECT_EQ(p.prefill_tokens, 4);
    EXPECT_EQ(p.prefill_key_pairs, 11 + 12 + 13 + 14);
    EXPECT_EQ(p.decode_rows, 0);
}

TEST(StepCostModel, NotReadyUntilItHasSeenPrefillsAndDecodes) {
    StepCostModel model;
    EXPECT_FALSE(model.ready());
    EXPECT_EQ(model.predict_ms(chunk_features(0, 100)), 0.0);
    for (int i = 0; i < 20; ++i) model.observe(chunk_features(100, 1), 5.0);   // decodes only
    EXPECT_FALSE(model.ready()) << "no prefill seen yet";
    for (int i = 0; i < 4; ++i) model.observe(chunk_features(0, 64), 8.0);
    EXPECT_TRUE(model.ready());
}

TEST(StepCostModel, RecoversAKnownLinearCost) {
    std::mt19937 rng(7);
    StepCostModel model(1.0);   // no forgetting: a fixed machine
    for (int i = 0; i < 400; ++i) {
        const StepFeatures f = random_step(rng);
        model.observe(f, machine_ms(f));
    }
    ASSERT_TRUE(model.ready());
    double worst = 0;
    for (int i = 0; i < 200; ++i) {
        const StepFeatures f = random_step(rng);
        worst = std::max(worst, std::abs(model.predict_ms(f) - machine_ms(f)) / machine_ms(f));
    }
    EXPECT_LT(worst, 0.02) << "relative prediction error on unseen steps";
    for (double b : model.coefficients()) EXPECT_GE(b, 0.0);
}

TEST(StepCostModel, MoreWorkNeverPredictsLess) {
    // Observed steps where prefill tokens and decode rows always come together: the fit cannot tell
    // them apart, and must still not give either a negative price.
    StepCostModel model;
    std::mt19937 rng(3);
    for (int i = 0; i < 200; ++i) {
        StepFeatures f;
        const int k = std::uniform_int_distribution<int>(1, 32)(rng);
        for (int r = 0; r < k; ++r) f += chunk_features(100, 1);
        f += chunk_features(0, 8 * k);
        model.observe(f, 2.0 + 0.1 * k + std::uniform_real_distribution<double>(-0.05, 0.05)(rng));
    }
    for (double b : model.coefficients()) EXPECT_GE(b, 0.0);
    StepFeatures base = chunk_features(100, 1);
    for (int n : {2, 16, 128, 512}) {
        StepFeatures more = base;
        more += chunk_features(0, n);
        EXPECT_GE(model.predict_ms(more), model.predict_ms(base)) << n;
    }
}

TEST(StepCostModel, FollowsAMachineThatSlowsDown) {
    std::mt19937 rng(11);
    StepCostModel model(0.95);
    for (int i = 0; i < 300; ++i) {
        const StepFeatures f = random_step(rng);
        model.observe(f, machine_ms(f));
    }
    for (int i = 0; i < 300; ++i) {   // another tenant arrives: everything takes twice as long
        const StepFeatures f = random_step(rng);
        model.observe(f, machine_ms(f, 2.0));
    }
    const StepFeatures probe = random_step(rng);
    EXPECT_NEAR(model.predict_ms(probe) / machine_ms(probe, 2.0), 1.0, 0.05);
}

TEST(StepCostModel, SlowRatioIsTheTailOfMeasuredOverPredicted) {
    std::mt19937 rng(5);
    StepCostModel model(1.0);
    for (int i = 0; i < 400; ++i) {   // fit a clean machine first
        const StepFeatures f = random_step(rng);
        model.observe(f, machine_ms(f));
    }
    EXPECT_NEAR(model.slow_ratio(), 1.0, 0.02) << "a machine the model fits has no slow steps";
    for (int i = 0; i < StepCostModel::kErrorWindow; ++i) {   // then one step in 10 takes twice as long
        const StepFeatures f = random_step(rng);
        model.observe(f, machine_ms(f) * (i % 10 == 0 ? 2.0 : 1.0));
    }
    EXPECT_GT(model.slow_ratio(), 1.5);
    EXPECT_LT(model.slow_ratio(), 2.3);
}

TEST(StepCostModel, IgnoresNonFiniteAndNegativeTimes) {
    StepCostModel model;
    model.observe(chunk_features(0, 10), -1.0);
    model.observe(chunk_features(0, 10), std::nan(""));
    EXPECT_EQ(model.num_observations(), 0);
}

}  // namespace
}  // namespace hichat::scheduler
