// Regexes for JSON scalars, used by the JSON Schema compiler: strings (any, bounded length,
// pattern, format), numbers and integers with bounds as digit patterns. Any thread (pure).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "grammar/regex.h"

namespace hichat::grammar {

// One character inside a JSON string: raw (not '"', '\', control) or any escape.
Regex json_string_char();
// The regex (over code points, for parse_regex) of a supported `format`; nullopt if unsupported.
std::optional<std::string> format_pattern(std::string_view format);

// Decimal integers in [lo, hi] (absent: unbounded), e.g. "0|[1-9][0-9]*". Bounds within +-1e18.
std::string integer_range_pattern(std::optional<int64_t> lo, std::optional<int64_t> hi);

struct NumberBound {
    int64_t value = 0;
    bool exclusive = false;
};
// Decimal numbers without exponent in the range given by integer bounds (JSON number syntax).
std::string number_range_pattern(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace hichat::grammar
