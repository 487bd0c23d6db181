// Helpers for the Prometheus text exposition format (version 0.0.4): number formatting, escaping,
// the # HELP / # TYPE header and label sets.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hichat::api {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using LabelSet = std::vector<std::pair<std::string, std::string>>;  // [num_labels] (name, value)

// Shortest text that reads back to the same double; "+Inf", "-Inf", "NaN" for the special values.
std::string format_number(double value);

// Label values escape backslash, double quote and newline; HELP text escapes backslash and newline.
std::string escape_label_value(std::string_view value);
std::string escape_help(std::string_view help);

// Appends "# HELP name help\n# TYPE name type\n".
void append_header(std::string& out, std::string_view name, std::string_view help, std::string_view type);

// Appends one sample line: name{l1="v1",...} value\n (no braces without labels).
void append_sample(std::string& out, std::string_view name, const LabelSet& labels, std::string_view value);

}  // namespace hichat::api
