// GPT-2's byte-level alphabet: every byte maps to one printable code point, so that byte strings
// can be stored as text in vocab files. Printable Latin-1 bytes map to themselves, the other 68
// bytes to U+0100 and up, in byte order.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace hichat::tokenizer {

// UTF-8 encoding of the code point that stands for each byte.  // [256]
const std::array<std::string, 256>& byte_level_alphabet();

// Maps byte-level text back to raw bytes. Returns false if a character is outside the alphabet.
bool byte_level_to_bytes(std::string_view text, std::string& bytes);

// Maps raw bytes to byte-level text.
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace hichat::tokenizer
