// Histogram: a Prometheus histogram with fixed bucket upper bounds. Thread-safe (one mutex per
// histogram, so a scrape sees buckets, sum and count from the same instant).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace hichat::api {

class Histogram {
public:
    struct Snapshot {
        std::vector<uint64_t> cumulative_counts;  // [num_bounds + 1] observations <= bound; last is +Inf
        double sum = 0;
        uint64_t count = 0;
    };

    // upper_bounds: finite, strictly increasing; +Inf is implicit. CHECKed (a programming error).
    Histogram(std::string name, std::string help, std::vector<double> upper_bounds);

    // Counts value in the first bucket whose bound is >= value. NaN is ignored.
    void observe(double value);

    Snapshot snapshot() const;
    const std::vector<double>& upper_bounds() const { return upper_bounds_; }
    const std::string& name() const { return name_; }

    // Appends HELP/TYPE, name_bucket{le="..."} (cumulative, ending with +Inf), name_sum, name_count.
    void render(std::string& out) const;

private:
    const std::string name_;
    const std::string help_;
    const std::vector<double> upper_bounds_;  // [num_bounds]
    mutable std::mutex mutex_;
    std::vector<uint64_t> bucket_counts_;     // [num_bounds + 1] per bucket, not cumulative; guarded
    double sum_ = 0;                          // guarded by mutex_
    uint64_t count_ = 0;                      // guarded by mutex_
};

}  // namespace hichat::api
