// Typed reads of JSON object fields whose errors name the file and the field (internal to model/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace hichat::model {

using Json = nlohmann::json;

// Parses `text`; errors name `file` and carry the parser's position. Never throws.
Result<Json> parse_json(const std::string& text, const std::string& file);

// Reads fields of one JSON object. `file` and `prefix` (e.g. "rope_scaling.") name it in errors.
// A field that is absent or null counts as absent. Holds references: `obj` must outlive it.
class JsonFields {
public:
    JsonFields(const Json& obj, std::string file, std::string prefix = "")
        : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {}

    bool has(std::string_view key) const;           // present and not null
    bool contains(std::string_view key) const;      // present, possibly null
    const Json* find(std::string_view key) const;   // nullptr if absent or null

    Result<int64_t> get_int(std::string_view key) const;   // required integer
    Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
    Result<int> get_positive_int(std::string_view key) const;  // required, in [1, INT32_MAX]
    Result<double> get_number(std::string_view key) const;     // required number
    Result<double> get_number_or(std::string_view key, double fallback) const;
    Result<bool> get_bool_or(std::string_view key, bool fallback) const;
    Result<std::string> get_string(std::string_view key) const;  // required string
    Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

    // "<file>: field '<prefix><key>' <what>"
    Status error(std::string_view key, std::string_view what) const;
    std::string field_name(std::string_view key) const { return prefix_ + std::string(key); }
    const std::string& file() const { return file_; }

private:
    const Json& obj_;
    std::string file_;
    std::string prefix_;
};

// An integer JSON value (or a float with an integral value, as some exporters write 8192.0).
bool json_to_int(const Json& v, int64_t* out);

}  // namespace hichat::model
