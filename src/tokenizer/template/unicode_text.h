// UTF-8 text helpers that follow JavaScript string semantics, because the reference renderer
// (@huggingface/jinja) runs on JS strings: its whitespace class is JS `\s`, `length` counts UTF-16 units,
// and slices work on code points (Array.from). Invalid UTF-8 bytes are kept and count as one unit each.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hichat::tokenizer::jinja {

// Decodes the code point starting at s[*pos] and advances *pos past it. An invalid or truncated
// sequence yields its first byte's value and advances by one byte.
uint32_t decode_utf8(std::string_view s, size_t* pos);
void append_utf8(uint32_t code_point, std::string& out);

// JS `\s`: the WhiteSpace and LineTerminator code points (also what String.prototype.trim removes).
bool is_js_space(uint32_t code_point);
// Number of bytes of the JS whitespace code point at s[pos], or 0 if there is none.
size_t js_space_length(std::string_view s, size_t pos);

std::string_view js_trim(std::string_view s);
std::string_view js_trim_start(std::string_view s);
std::string_view js_trim_end(std::string_view s);

int64_t utf16_length(std::string_view s);                           // JS String.length
std::vector<std::string_view> split_code_points(std::string_view s);  // JS Array.from(string)

// Case mapping is ASCII only; JS maps all of Unicode, so upper/lower/title/capitalize differ from the
// reference on non-ASCII letters (no chat template we target uses them).
std::string ascii_upper(std::string_view s);
std::string ascii_lower(std::string_view s);
bool is_word_byte(char c);  // JS /\w/: [A-Za-z0-9_]

}  // namespace hichat::tokenizer::jinja
