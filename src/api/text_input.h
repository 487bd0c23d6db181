// Cleaning of client text before it reaches the tokenizer.
#pragma once

#include <string>
#include <string_view>

namespace hichat::api {

// Replaces every invalid UTF-8 sequence in `body` with kInvalidUtf8Marker (so that a JSON parser
// accepts it and the field holding it can be named); returns whether anything was replaced.
bool mark_invalid_utf8(std::string& body);
inline constexpr std::string_view kInvalidUtf8Marker = "\xF4\x8F\xBF\xBF";  // U+10FFFF, a noncharacter

// Removes C0 control characters other than tab, newline and carriage return, DEL, and C1 controls.
std::string strip_control_chars(std::string_view text);

}  // namespace hichat::api
