// Prometheus counters: Counter (one unlabeled series, an atomic) and CounterFamily (one series per
// distinct set of label values, a map behind one mutex). Both thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace hichat::api {

class Counter {
public:
    Counter(std::string name, std::string help) : name_(std::move(name)), help_(std::move(help)) {}

    void add(uint64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
    uint64_t value() const { return value_.load(std::memory_order_relaxed); }
    void render(std::string& out) const;  // HELP/TYPE and one sample, 0 before the first add

private:
    const std::string name_;
    const std::string help_;
    std::atomic<uint64_t> value_{0};
};

class CounterFamily {
public:
    CounterFamily(std::string name, std::string help, std::vector<std::string> label_names);

    // label_values: [num_labels], in the order of label_names (CHECKed). Callers keep the number of
    // distinct values bounded (route names, not raw paths).
    void add(const std::vector<std::string>& label_values, uint64_t n = 1);
    uint64_t value(const std::vector<std::string>& label_values) const;  // 0 for an unseen series

    void render(std::string& out) const;  // HELP/TYPE and one sample per series, sorted by labels

private:
    const std::string name_;
    const std::string help_;
    const std::vector<std::string> label_names_;  // [num_labels]
    mutable std::mutex mutex_;
    std::map<std::vector<std::string>, uint64_t> values_;  // label values -> count; guarded by mutex_
};

}  // namespace hichat::api
