// The {"String": ...} / {"Regex": ...} pattern objects of tokenizer.json (Replace, Split).
#pragma once

#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace hichat::tokenizer {

// Errors: kInvalidArgument for a malformed object or a regex PCRE2 rejects.
Result<std::shared_ptr<Regex>> parse_pattern(const nlohmann::json& pattern);

}  // namespace hichat::tokenizer
