// UTF-8 helpers shared by the tokenizer: validation with replacement, code point iteration.
// Invalid input is replaced with U+FFFD using the "maximal subpart" rule (one U+FFFD per maximal
// prefix of a valid sequence, or per lone bad byte), the rule of WHATWG TextDecoder and Rust's
// String::from_utf8_lossy, so our replacement matches what the JavaScript reference sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hichat::tokenizer {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Appends the valid-UTF-8 rendering of bytes to out. When final is false, an incomplete but so far
// valid sequence at the end is not consumed; returns the number of bytes consumed.
size_t append_lossy_utf8(std::string_view bytes, bool final, std::string& out);

// The whole string with invalid sequences replaced by U+FFFD.
std::string to_valid_utf8(std::string_view bytes);

bool is_valid_utf8(std::string_view bytes);

// Length in bytes of the UTF-8 sequence that starts with lead (1 for invalid lead bytes).
inline int utf8_sequence_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    return 1;
}

// Decodes the code point at pos of valid UTF-8 text and advances pos past it.
char32_t next_code_point(std::string_view text, size_t& pos);

void append_utf8(char32_t cp, std::string& out);

}  // namespace hichat::tokenizer
