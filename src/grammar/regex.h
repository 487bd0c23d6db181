// Byte-level regular expressions: the terminals of a grammar (lexemes) are built from these.
// A Regex is an immutable tree shared by pointer; builders simplify trivially (empty, nothing).
// Code-point ranges become UTF-8 byte automata (utf8_range), so every lexeme is a language of bytes.
// Any thread (immutable).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hichat::grammar {

// A set of bytes (256 bits).
struct ByteSet {
    std::array<uint64_t, 4> words{};

    void add(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
    void add_range(uint8_t lo, uint8_t hi) {
        for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
    }
    bool has(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
    bool empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
    bool operator==(const ByteSet&) const = default;
};

enum class RegexKind {
    kEmpty,    // matches only the empty string
    kNothing,  // matches no string
    kByte,     // one byte from `bytes`
    kConcat,   // items in order
    kAlt,      // any of items
    kRepeat,   // items[0] repeated [min, max] times (max -1: unbounded)
};

struct RegexNode;
using Regex = std::shared_ptr<const RegexNode>;

struct RegexNode {
    RegexKind kind = RegexKind::kEmpty;
    ByteSet bytes;              // kByte
    std::vector<Regex> items;   // kConcat, kAlt, kRepeat (one item)
    int min = 0, max = 0;       // kRepeat; max -1: unbounded
};

Regex re_empty();
Regex re_nothing();
Regex re_byte_set(const ByteSet& set);
Regex re_byte(uint8_t b);
Regex re_literal(std::string_view bytes);
Regex re_concat(std::vector<Regex> items);
Regex re_alt(std::vector<Regex> items);
Regex re_repeat(Regex item, int min, int max);  // max -1: unbounded
Regex re_optional(Regex item);

// The UTF-8 encodings of the code points in [lo, hi] (surrogates D800-DFFF excluded).
Regex utf8_range(uint32_t lo, uint32_t hi);

bool is_nullable(const Regex& r);
// A canonical text of the tree, used to deduplicate lexemes.
std::string regex_key(const Regex& r);

}  // namespace hichat::grammar
