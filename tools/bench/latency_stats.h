// LatencyStats: mean / median / std / p99 of one latency metric, computed exactly as `vllm bench serve`
// does with numpy (np.mean, np.median, np.std with ddof 0, np.percentile with linear interpolation).
#pragma once

#include <vector>

namespace hichat::tools::bench {

struct LatencyStats {
    double mean_ms = 0;
    double median_ms = 0;
    double std_ms = 0;
    double p99_ms = 0;
};

// The q-th percentile (q in [0, 100]) of `values`, linearly interpolated between the two closest ranks
// (numpy's default). 0 for an empty list.
double percentile(std::vector<double> values, double q);

// Summary of `values_s` (seconds) in milliseconds; all zero for an empty list, as vLLM reports it.
LatencyStats summarize_ms(const std::vector<double>& values_s);

}  // namespace hichat::tools::bench
