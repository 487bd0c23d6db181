// Regular expressions over Unicode code points, as the regex front end parses them (JSON Schema
// `pattern`, compile_regex, GBNF character classes), and their two encodings into byte regexes:
// raw UTF-8 (the text itself) and the inside of a JSON string (specials escaped as JSON writes them).
// Any thread (immutable).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "grammar/regex.h"

namespace hichat::grammar {

// Sorted, disjoint, inclusive code-point ranges.
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;
CodePointRanges normalize_ranges(CodePointRanges r);
CodePointRanges invert_ranges(const CodePointRanges& r);  // within [0, 0x10FFFF]

enum class CharRegexKind { kEmpty, kSet, kConcat, kAlt, kRepeat };

struct CharRegexNode;
using CharRegex = std::shared_ptr<const CharRegexNode>;

struct CharRegexNode {
    CharRegexKind kind = CharRegexKind::kEmpty;
    CodePointRanges set;           // kSet (one code point from the set)
    std::vector<CharRegex> items;  // kConcat, kAlt, kRepeat (one item)
    int min = 0, max = 0;          // kRepeat; max -1 unbounded
};

CharRegex cre_empty();
CharRegex cre_set(CodePointRanges set);
CharRegex cre_literal(std::string_view utf8);  // invalid UTF-8 bytes are taken as code points 0x80-0xFF
CharRegex cre_concat(std::vector<CharRegex> items);
CharRegex cre_alt(std::vector<CharRegex> items);
CharRegex cre_repeat(CharRegex item, int min, int max);

// The text as UTF-8 bytes.
Regex to_utf8_regex(const CharRegex& r);
// The same strings as they appear between the quotes of a JSON string: '"' and '\' and control
// characters escaped (\" \\ \b \f \n \r \t, else \u00XX with either hex case), everything else raw.
Regex to_json_string_regex(const CharRegex& r);

// A regex in the ECMAScript subset used by JSON Schema `pattern` (see docs/grammar.md).
// `search`: JSON Schema semantics: a top-level alternative without ^ (or $) may be preceded (or
// followed) by anything; otherwise the whole text must match and edge anchors are no-ops.
// Anchors elsewhere than the edges of a top-level alternative are refused.
// Errors (kInvalidArgument) name the construct and the byte offset: "regex: backreference \\1 at
// offset 4 is not supported". max_repeat bounds {m,n} counts.
Result<CharRegex> parse_regex(std::string_view pattern, bool search, int max_repeat);

}  // namespace hichat::grammar
