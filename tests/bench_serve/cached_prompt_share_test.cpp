// The cached prompt share: the sums, what counts, and "n/a" when the server never reports the field.
#include "bench/cached_prompt_share.h"

#include <gtest/gtest.h>

namespace hichat::tools::bench {
namespace {

RequestOutcome outcome(bool success, int prompt_tokens, int usage_prompt_tokens, int cached_tokens) {
    RequestOutcome o;
    o.success = success;
    o.num_prompt_tokens = prompt_tokens;
    o.num_usage_prompt_tokens = usage_prompt_tokens;
    o.num_cached_prompt_tokens = cached_tokens;
    return o;
}

TEST(CachedPromptShare, SumOfCachedOverSumOfPromptTokens) {
    const auto s = cached_prompt_share(
        {outcome(true, 100, 100, 0), outcome(true, 100, 100, 64), outcome(true, 200, 200, 192)});
    EXPECT_EQ(s.num_reporting, 3);
    EXPECT_EQ(s.num_prompt_tokens, 400);
    EXPECT_EQ(s.num_cached_tokens, 256);
    ASSERT_TRUE(s.share().has_value());
    EXPECT_DOUBLE_EQ(*s.share(), 0.64);  // not the mean of the per-request shares (0.53)
}

TEST(CachedPromptShare, OnlySuccessfulRequestsThatReportTheFieldCount) {
    const auto s = cached_prompt_share(
        {outcome(true, 100, 100, 50), outcome(false, 100, 100, 100), outcome(true, 300, 300, -1)});
    EXPECT_EQ(s.num_reporting, 1);
    EXPECT_EQ(s.num_prompt_tokens, 100);
    EXPECT_DOUBLE_EQ(*s.share(), 0.5);
}

TEST(CachedPromptShare, ServerCountOfPromptTokensWinsOverTheSentCount) {
    // A text prompt (multi-turn) has no sent count; usage.prompt_tokens is what the cache covers.
    const auto s = cached_prompt_share({outcome(true, 0, 80, 60), outcome(true, 40, -1, 10)});
    EXPECT_EQ(s.num_prompt_tokens, 120);
    EXPECT_DOUBLE_EQ(*s.share(), 70.0 / 120.0);
}

TEST(CachedPromptShare, NotApplicableWhenNobodyReportsIt) {
    EXPECT_FALSE(cached_prompt_share({outcome(true, 100, 100, -1)}).share().has_value());
    EXPECT_FALSE(cached_prompt_share({}).share().has_value());
    // Reported, but zero cached: a share of 0, not n/a.
    EXPECT_EQ(cached_prompt_share({outcome(true, 100, 100, 0)}).share(), 0.0);
}

}  // namespace
}  // namespace hichat::tools::bench
