// Percentiles and summaries against values computed by hand with numpy's definitions
// (np.percentile linear interpolation, np.std with ddof 0).
#include "bench/latency_stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hichat::tools::bench {
namespace {

TEST(LatencyStats, PercentileInterpolatesBetweenRanks) {
    const std::vector<double> v = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};  // unsorted on purpose
    // rank = q / 100 * (n - 1)
    EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
    EXPECT_DOUBLE_EQ(percentile(v, 100), 10);
    EXPECT_DOUBLE_EQ(percentile(v, 50), 5.5);           // rank 4.5 between 5 and 6
    EXPECT_DOUBLE_EQ(percentile(v, 99), 9.91);          // rank 8.91: 9 + 0.91 * (10 - 9)
    EXPECT_DOUBLE_EQ(percentile(v, 25), 3.25);          // rank 2.25: 3 + 0.25 * (4 - 3)
    EXPECT_DOUBLE_EQ(percentile({1, 2, 3}, 99), 2.98);  // rank 1.98
    EXPECT_DOUBLE_EQ(percentile({42}, 99), 42);
    EXPECT_DOUBLE_EQ(percentile({}, 99), 0);
}

TEST(LatencyStats, SummaryIsInMillisecondsWithPopulationStd) {
    // 0.1, 0.2, 0.3, 0.6 s: mean 0.3, median 0.25, var = (0.04 + 0.01 + 0 + 0.09) / 4 = 0.035
    const LatencyStats s = summarize_ms({0.6, 0.1, 0.3, 0.2});
    EXPECT_NEAR(s.mean_ms, 300, 1e-9);
    EXPECT_NEAR(s.median_ms, 250, 1e-9);
    EXPECT_NEAR(s.std_ms, std::sqrt(0.035) * 1e3, 1e-9);
    EXPECT_NEAR(s.p99_ms, (0.3 + 0.97 * 0.3) * 1e3, 1e-9);  // rank 2.97 between 0.3 and 0.6
}

TEST(LatencyStats, EmptyListIsAllZero) {
    const LatencyStats s = summarize_ms({});
    EXPECT_EQ(s.mean_ms, 0);
    EXPECT_EQ(s.median_ms, 0);
    EXPECT_EQ(s.std_ms, 0);
    EXPECT_EQ(s.p99_ms, 0);
}

}  // namespace
}  // namespace hichat::tools::bench
