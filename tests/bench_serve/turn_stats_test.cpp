// Per-turn aggregation of a multi-turn run's conversation-major outcomes.
#include "bench/turn_stats.h"

#include <gtest/gtest.h>

namespace hichat::tools::bench {
namespace {

RequestOutcome turn(double ttft_s, int prompt_tokens, int cached_tokens) {
    RequestOutcome o;
    o.success = true;
    o.ttft_s = ttft_s;
    o.num_usage_prompt_tokens = prompt_tokens;
    o.num_cached_prompt_tokens = cached_tokens;
    return o;
}

RequestOutcome failed() {
    RequestOutcome o;
    o.error = "an earlier turn of the conversation failed";
    return o;
}

TEST(TurnStats, GroupsOutcomesByTurnIndex) {
    // 3 conversations x 3 turns, conversation-major; conversation 2 failed at turn 1.
    const std::vector<RequestOutcome> outcomes = {
        turn(0.10, 20, 0), turn(0.02, 50, 40), turn(0.03, 80, 70),  // conversation 0
        turn(0.30, 20, 0), turn(0.04, 50, 30), turn(0.05, 80, 72),  // conversation 1
        turn(0.20, 20, 0), failed(),           failed(),            // conversation 2
    };
    const auto stats = stats_by_turn(outcomes, 3);
    ASSERT_EQ(stats.size(), 3u);
    EXPECT_EQ(stats[0].turn, 0);
    EXPECT_EQ(stats[0].num_completed, 3);
    EXPECT_EQ(stats[0].num_failed, 0);
    EXPECT_NEAR(stats[0].ttft.mean_ms, 200, 1e-9);  // {100, 300, 200}
    EXPECT_NEAR(stats[0].ttft.median_ms, 200, 1e-9);
    EXPECT_NEAR(stats[0].ttft.p99_ms, 200 + 0.98 * 100, 1e-9);
    EXPECT_DOUBLE_EQ(*stats[0].cache.share(), 0.0);

    EXPECT_EQ(stats[1].turn, 1);
    EXPECT_EQ(stats[1].num_completed, 2);
    EXPECT_EQ(stats[1].num_failed, 1);
    EXPECT_NEAR(stats[1].ttft.mean_ms, 30, 1e-9);  // {20, 40}
    EXPECT_NEAR(stats[1].ttft.p99_ms, 20 + 0.99 * 20, 1e-9);
    EXPECT_DOUBLE_EQ(*stats[1].cache.share(), 70.0 / 100.0);

    EXPECT_EQ(stats[2].num_completed, 2);
    EXPECT_DOUBLE_EQ(*stats[2].cache.share(), 142.0 / 160.0);
}

TEST(TurnStats, NoCachedTokensReportedIsNotApplicablePerTurn) {
    const auto stats = stats_by_turn({turn(0.1, 10, -1), turn(0.2, 20, -1)}, 2);
    ASSERT_EQ(stats.size(), 2u);
    EXPECT_FALSE(stats[0].cache.share().has_value());
    EXPECT_FALSE(stats[1].cache.share().has_value());
    EXPECT_TRUE(stats_by_turn({}, 0).empty());
}

}  // namespace
}  // namespace hichat::tools::bench
