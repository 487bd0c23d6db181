#include "api/telemetry/histogram.h"

#include <algorithm>
#include <cmath>

#include "api/telemetry/prometheus_text.h"
#include "base/check.h"

namespace hichat::api {

Histogram::Histogram(std::string name, std::string help, std::vector<double> upper_bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      upper_bounds_(std::move(upper_bounds)),
      bucket_counts_(upper_bounds_.size() + 1, 0) {
    for (size_t i = 0; i < upper_bounds_.size(); ++i) {
        CHECK(std::isfinite(upper_bounds_[i])) << name_ << " bound " << i;
        if (i > 0) {
            CHECK_LT(upper_bounds_[i - 1], upper_bounds_[i]) << name_ << " bounds must increase";
        }
    }
}

void Histogram::observe(double value) {
    if (std::isnan(value)) return;
    size_t bucket = std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
    std::lock_guard lock(mutex_);
    ++bucket_counts_[bucket];
    sum_ += value;
    ++count_;
}

Histogram::Snapshot Histogram::snapshot() const {
    Snapshot snap;
    std::lock_guard lock(mutex_);
    snap.cumulative_counts.resize(bucket_counts_.size());
    uint64_t running = 0;
    for (size_t i = 0; i < bucket_counts_.size(); ++i) {
        running += bucket_counts_[i];
        snap.cumulative_counts[i] = running;
    }
    snap.sum = sum_;
    snap.count = count_;
    return snap;
}

void Histogram::render(std::string& out) const {
    Snapshot snap = snapshot();
    append_header(out, name_, help_, "histogram");
    std::string bucket_name = name_ + "_bucket";
    for (size_t i = 0; i < snap.cumulative_counts.size(); ++i) {
        std::string le = i < upper_bounds_.size() ? format_number(upper_bounds_[i]) : "+Inf";
        append_sample(out, bucket_name, {{"le", le}}, std::to_string(snap.cumulative_counts[i]));
    }
    append_sample(out, name_ + "_sum", {}, format_number(snap.sum));
    append_sample(out, name_ + "_count", {}, std::to_string(snap.count));
}

}  // namespace hichat::api
