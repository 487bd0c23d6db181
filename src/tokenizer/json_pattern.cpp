#include "tokenizer/json_pattern.h"

#include <nlohmann/json.hpp>

namespace hichat::tokenizer {

Result<std::shared_ptr<Regex>> parse_pattern(const nlohmann::json& pattern) {
    const bool is_string = pattern.is_object() && pattern.contains("String") && pattern["String"].is_string();
    const bool is_regex = pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string();
    if (!is_string && !is_regex) {
        return invalid_argument("pattern must be {\"String\": ...} or {\"Regex\": ...}, got " + pattern.dump());
    }
    auto regex = is_string ? Regex::literal(pattern["String"].get<std::string>())
                           : Regex::compile(pattern["Regex"].get<std::string>());
    if (!regex.ok()) return regex.status();
    return std::shared_ptr<Regex>(std::move(regex).value());
}

}  // namespace hichat::tokenizer
