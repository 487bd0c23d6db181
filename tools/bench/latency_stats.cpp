#include "bench/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hichat::tools::bench {

double percentile(std::vector<double> values, double q) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    return values[lo] + (values[hi] - values[lo]) * frac;
}

LatencyStats summarize_ms(const std::vector<double>& values_s) {
    LatencyStats s;
    if (values_s.empty()) return s;
    const double n = static_cast<double>(values_s.size());
    const double mean = std::accumulate(values_s.begin(), values_s.end(), 0.0) / n;
    double sum_sq = 0;
    for (double v : values_s) sum_sq += (v - mean) * (v - mean);
    s.mean_ms = mean * 1e3;
    s.std_ms = std::sqrt(sum_sq / n) * 1e3;
    s.median_ms = percentile(values_s, 50) * 1e3;
    s.p99_ms = percentile(values_s, 99) * 1e3;
    return s;
}

}  // namespace hichat::tools::bench
