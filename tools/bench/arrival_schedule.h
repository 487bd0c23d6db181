// Arrival times of the benchmark's requests: a seeded Poisson process, as `vllm bench serve
// --request-rate R` (burstiness 1) draws them, or everything at t = 0.
#pragma once

#include <cstdint>
#include <vector>

namespace hichat::tools::bench {

struct ArrivalConfig {
    int num_requests = 0;
    double request_rate = 0;  // requests/s; 0 or infinity: all arrive at t = 0
    uint64_t seed = 0;
    bool rescale = true;  // as vLLM: scale the times so the last one lands exactly at N / rate
};

// [num_requests] seconds after the start, non-decreasing. Request i arrives after i + 1 exponential
// gaps of mean 1 / rate (inverse-CDF sampling of a splitmix64 stream, so the same seed gives the same
// times on every platform).
std::vector<double> arrival_times_s(const ArrivalConfig& config);

}  // namespace hichat::tools::bench
