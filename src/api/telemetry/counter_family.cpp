#include "api/telemetry/counter_family.h"

#include "api/telemetry/prometheus_text.h"
#include "base/check.h"

namespace hichat::api {

void Counter::render(std::string& out) const {
    append_header(out, name_, help_, "counter");
    append_sample(out, name_, {}, std::to_string(value()));
}

CounterFamily::CounterFamily(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

void CounterFamily::add(const std::vector<std::string>& label_values, uint64_t n) {
    CHECK_EQ(label_values.size(), label_names_.size()) << name_;
    std::lock_guard lock(mutex_);
    values_[label_values] += n;
}

uint64_t CounterFamily::value(const std::vector<std::string>& label_values) const {
    std::lock_guard lock(mutex_);
    auto it = values_.find(label_values);
    return it == values_.end() ? 0 : it->second;
}

void CounterFamily::render(std::string& out) const {
    append_header(out, name_, help_, "counter");
    std::lock_guard lock(mutex_);
    for (const auto& [values, count] : values_) {
        LabelSet labels;
        for (size_t i = 0; i < label_names_.size(); ++i) labels.emplace_back(label_names_[i], values[i]);
        append_sample(out, name_, labels, std::to_string(count));
    }
}

}  // namespace hichat::api
