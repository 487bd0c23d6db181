// Poisson arrivals: exponential gaps with mean 1 / rate (checked statistically on a long seeded
// sequence), vLLM's rescaling, determinism, and the all-at-once case.
#include "bench/arrival_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hichat::tools::bench {
namespace {

std::vector<double> gaps(const std::vector<double>& times) {
    std::vector<double> g;
    double prev = 0;
    for (double t : times) {
        g.push_back(t - prev);
        prev = t;
    }
    return g;
}

TEST(ArrivalSchedule, GapsAreExponentialWithMeanOneOverRate) {
    const int n = 40000;
    const double rate = 8.0;
    const auto times =
        arrival_times_s({.num_requests = n, .request_rate = rate, .seed = 7, .rescale = false});
    ASSERT_EQ(times.size(), static_cast<size_t>(n));
    double sum = 0, sum_sq = 0;
    int num_below_mean = 0;
    for (double g : gaps(times)) {
        ASSERT_GE(g, 0);
        sum += g;
        sum_sq += g * g;
        num_below_mean += g < 1 / rate;
    }
    const double mean = sum / n;
    const double std = std::sqrt(sum_sq / n - mean * mean);
    // Standard error of the mean is (1 / rate) / sqrt(n) = 0.5%: 3% is over 5 sigma.
    EXPECT_NEAR(mean, 1 / rate, 0.03 / rate);
    EXPECT_NEAR(std / mean, 1.0, 0.03);  // an exponential's coefficient of variation is 1
    // P(gap < mean) = 1 - 1/e = 0.632 for an exponential
    EXPECT_NEAR(static_cast<double>(num_below_mean) / n, 1 - std::exp(-1.0), 0.01);
}

TEST(ArrivalSchedule, RescaledSoTheLastArrivesAtNOverRate) {
    const auto times = arrival_times_s({.num_requests = 100, .request_rate = 4.0, .seed = 3});
    ASSERT_EQ(times.size(), 100u);
    EXPECT_NEAR(times.back(), 25.0, 1e-9);
    for (size_t i = 1; i < times.size(); ++i) EXPECT_GE(times[i], times[i - 1]);
    EXPECT_GT(times.front(), 0);
}

TEST(ArrivalSchedule, SeededAndDeterministic) {
    const ArrivalConfig a{.num_requests = 50, .request_rate = 2.0, .seed = 11};
    ArrivalConfig b = a;
    b.seed = 12;
    EXPECT_EQ(arrival_times_s(a), arrival_times_s(a));
    EXPECT_NE(arrival_times_s(a), arrival_times_s(b));
}

TEST(ArrivalSchedule, InfiniteRateSendsEverythingAtOnce) {
    for (double rate : {0.0, static_cast<double>(INFINITY)}) {
        const auto times = arrival_times_s({.num_requests = 5, .request_rate = rate, .seed = 1});
        EXPECT_EQ(times, std::vector<double>(5, 0.0));
    }
}

}  // namespace
}  // namespace hichat::tools::bench
