#include "bench/arrival_schedule.h"

#include <algorithm>
#include <cmath>

namespace hichat::tools::bench {
namespace {

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Uniform in (0, 1]: never 0, so the logarithm stays finite.
double uniform_open_zero(uint64_t& state) {
    return static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53;
}

}  // namespace

std::vector<double> arrival_times_s(const ArrivalConfig& config) {
    std::vector<double> times(static_cast<size_t>(std::max(config.num_requests, 0)), 0.0);
    if (times.empty() || !(config.request_rate > 0) || std::isinf(config.request_rate)) return times;
    uint64_t state = config.seed;
    double t = 0;
    for (double& time : times) {
        t += -std::log(uniform_open_zero(state)) / config.request_rate;
        time = t;
    }
    if (config.rescale) {
        const double factor = static_cast<double>(config.num_requests) / config.request_rate / times.back();
        for (double& time : times) time *= factor;
    }
    return times;
}

}  // namespace hichat::tools::bench
