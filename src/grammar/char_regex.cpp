#include "grammar/char_regex.h"

#include <algorithm>

namespace hichat::grammar {
namespace {

CharRegex make(CharRegexNode n) { return std::make_shared<const CharRegexNode>(std::move(n)); }

// Decodes one UTF-8 character at s[i]; an invalid byte becomes its own value (0x80-0xFF).
uint32_t next_code_point(std::string_view s, size_t& i) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
        ++i;
        return b0;
    }
    uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int k = 1; k < len; ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xC0) != 0x80) {
            ++i;
            return b0;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    i += len;
    return cp;
}

Regex json_escape_of(uint32_t cp) {
    switch (cp) {
        case '"': return re_literal("\\\"");
        case '\\': return re_literal("\\\\");
        case '\b': return re_literal("\\b");
        case '\f': return re_literal("\\f");
        case '\n': return re_literal("\\n");
        case '\r': return re_literal("\\r");
        case '\t': return re_literal("\\t");
        default: break;
    }
    // \u00XX with either case of hex digits.
    auto hex_digit = [](uint32_t v) {
        ByteSet s;
        if (v < 10) {
            s.add(static_cast<uint8_t>('0' + v));
        } else {
            s.add(static_cast<uint8_t>('a' + v - 10));
            s.add(static_cast<uint8_t>('A' + v - 10));
        }
        return re_byte_set(s);
    };
    return re_concat({re_literal("\\u00"), hex_digit(cp >> 4), hex_digit(cp & 15)});
}

Regex encode_set(const CodePointRanges& set, bool json) {
    std::vector<Regex> parts;
    for (auto [lo, hi] : set) {
        if (!json) {
            parts.push_back(utf8_range(lo, hi));
            continue;
        }
        // Specials (controls, '"', '\') escaped one by one; the rest raw.
        uint32_t start = lo;
        for (uint32_t cp = lo; cp <= hi && cp < 0x80; ++cp) {
            const bool special = cp < 0x20 || cp == '"' || cp == '\\';
            if (!special) continue;
            if (start < cp) parts.push_back(utf8_range(start, cp - 1));
            parts.push_back(json_escape_of(cp));
            start = cp + 1;
        }
        if (start <= hi) parts.push_back(utf8_range(start, hi));
    }
    return re_alt(std::move(parts));
}

Regex encode(const CharRegex& r, bool json) {
    switch (r->kind) {
        case CharRegexKind::kEmpty: return re_empty();
        case CharRegexKind::kSet: return encode_set(r->set, json);
        case CharRegexKind::kConcat:
        case CharRegexKind::kAlt: {
            std::vector<Regex> items;
            for (const CharRegex& x : r->items) items.push_back(encode(x, json));
            return r->kind == CharRegexKind::kConcat ? re_concat(std::move(items)) : re_alt(std::move(items));
        }
        case CharRegexKind::kRepeat: return re_repeat(encode(r->items[0], json), r->min, r->max);
    }
    return re_nothing();
}

}  // namespace

CodePointRanges normalize_ranges(CodePointRanges r) {
    std::sort(r.begin(), r.end());
    CodePointRanges out;
    for (auto [lo, hi] : r) {
        if (lo > hi) continue;
        if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
        else out.emplace_back(lo, hi);
    }
    return out;
}

CodePointRanges invert_ranges(const CodePointRanges& r) {
    CodePointRanges out;
    uint32_t next = 0;
    for (auto [lo, hi] : normalize_ranges(r)) {
        if (lo > next) out.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
    return out;
}

CharRegex cre_empty() { return make({CharRegexKind::kEmpty}); }

CharRegex cre_set(CodePointRanges set) {
    CharRegexNode n{CharRegexKind::kSet};
    n.set = normalize_ranges(std::move(set));
    return make(std::move(n));
}

CharRegex cre_literal(std::string_view utf8) {
    std::vector<CharRegex> items;
    for (size_t i = 0; i < utf8.size();) {
        const uint32_t cp = next_code_point(utf8, i);
        items.push_back(cre_set({{cp, cp}}));
    }
    return cre_concat(std::move(items));
}

CharRegex cre_concat(std::vector<CharRegex> items) {
    if (items.size() == 1) return items[0];
    CharRegexNode n{CharRegexKind::kConcat};
    n.items = std::move(items);
    return make(std::move(n));
}

CharRegex cre_alt(std::vector<CharRegex> items) {
    if (items.size() == 1) return items[0];
    CharRegexNode n{CharRegexKind::kAlt};
    n.items = std::move(items);
    return make(std::move(n));
}

CharRegex cre_repeat(CharRegex item, int min, int max) {
    CharRegexNode n{CharRegexKind::kRepeat};
    n.items = {std::move(item)};
    n.min = min;
    n.max = max;
    return make(std::move(n));
}

Regex to_utf8_regex(const CharRegex& r) { return encode(r, false); }
Regex to_json_string_regex(const CharRegex& r) { return encode(r, true); }

}  // namespace hichat::grammar
