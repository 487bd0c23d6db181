#include "grammar/regex.h"

#include <algorithm>

namespace hichat::grammar {
namespace {

Regex make(RegexNode node) { return std::make_shared<const RegexNode>(std::move(node)); }

void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// Byte sequences for [lo, hi] where lo and hi have the same encoded length: split until each piece is a
// product of byte ranges (the classic utf8-ranges construction).
void utf8_same_length(uint32_t lo, uint32_t hi, std::vector<Regex>& out) {
    std::string a, b;
    append_utf8(lo, a);
    append_utf8(hi, b);
    const size_t n = a.size();
    // Find the first position i where the suffixes are not full continuation ranges.
    for (size_t i = 1; i < n; ++i) {
        const uint32_t mask = (uint32_t{1} << (6 * (n - i))) - 1;
        if ((lo & ~mask) != (hi & ~mask)) {
            if ((lo & mask) != 0) {
                utf8_same_length(lo, lo | mask, out);
                utf8_same_length((lo | mask) + 1, hi, out);
                return;
            }
            if ((hi & mask) != mask) {
                utf8_same_length(lo, (hi & ~mask) - 1, out);
                utf8_same_length(hi & ~mask, hi, out);
                return;
            }
        }
    }
    std::vector<Regex> seq;
    for (size_t i = 0; i < n; ++i) {
        ByteSet s;
        s.add_range(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
        seq.push_back(re_byte_set(s));
    }
    out.push_back(re_concat(std::move(seq)));
}

}  // namespace

Regex re_empty() {
    static const Regex kEmpty = make({RegexKind::kEmpty});
    return kEmpty;
}
Regex re_nothing() {
    static const Regex kNothing = make({RegexKind::kNothing});
    return kNothing;
}
Regex re_byte_set(const ByteSet& set) {
    if (set.empty()) return re_nothing();
    RegexNode n{RegexKind::kByte};
    n.bytes = set;
    return make(std::move(n));
}
Regex re_byte(uint8_t b) {
    ByteSet s;
    s.add(b);
    return re_byte_set(s);
}
Regex re_literal(std::string_view bytes) {
    std::vector<Regex> items;
    for (char c : bytes) items.push_back(re_byte(static_cast<uint8_t>(c)));
    return re_concat(std::move(items));
}

Regex re_concat(std::vector<Regex> items) {
    std::vector<Regex> flat;
    for (Regex& r : items) {
        if (r->kind == RegexKind::kNothing) return re_nothing();
        if (r->kind == RegexKind::kEmpty) continue;
        if (r->kind == RegexKind::kConcat) flat.insert(flat.end(), r->items.begin(), r->items.end());
        else flat.push_back(std::move(r));
    }
    if (flat.empty()) return re_empty();
    if (flat.size() == 1) return flat[0];
    RegexNode n{RegexKind::kConcat};
    n.items = std::move(flat);
    return make(std::move(n));
}

Regex re_alt(std::vector<Regex> items) {
    std::vector<Regex> flat;
    ByteSet merged;
    bool has_bytes = false;
    for (Regex& r : items) {
        if (r->kind == RegexKind::kNothing) continue;
        if (r->kind == RegexKind::kAlt) {
            for (const Regex& sub : r->items) flat.push_back(sub);
        } else {
            flat.push_back(std::move(r));
        }
    }
    // Single-byte alternatives merge into one set.
    std::vector<Regex> out;
    for (Regex& r : flat) {
        if (r->kind == RegexKind::kByte) {
            for (int w = 0; w < 4; ++w) merged.words[w] |= r->bytes.words[w];
            has_bytes = true;
        } else {
            out.push_back(std::move(r));
        }
    }
    if (has_bytes) out.insert(out.begin(), re_byte_set(merged));
    if (out.empty()) return re_nothing();
    if (out.size() == 1) return out[0];
    RegexNode n{RegexKind::kAlt};
    n.items = std::move(out);
    return make(std::move(n));
}

Regex re_repeat(Regex item, int min, int max) {
    if (max == 0) return re_empty();
    if (item->kind == RegexKind::kEmpty) return item;
    if (item->kind == RegexKind::kNothing) return min == 0 ? re_empty() : item;
    if (min == 1 && max == 1) return item;
    RegexNode n{RegexKind::kRepeat};
    n.items = {std::move(item)};
    n.min = min;
    n.max = max;
    return make(std::move(n));
}

Regex re_optional(Regex item) { return re_repeat(std::move(item), 0, 1); }

Regex utf8_range(uint32_t lo, uint32_t hi) {
    std::vector<Regex> parts;
    auto add = [&](uint32_t a, uint32_t b) {
        if (a > b) return;
        static const uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
        uint32_t start = a;
        for (uint32_t bound : kBounds) {
            if (start > b) break;
            if (start > bound) continue;
            const uint32_t end = std::min(b, bound);
            utf8_same_length(start, end, parts);
            start = end + 1;
        }
    };
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo > hi) return re_nothing();
    if (lo < 0xD800) add(lo, std::min<uint32_t>(hi, 0xD7FF));
    if (hi > 0xDFFF) add(std::max<uint32_t>(lo, 0xE000), hi);
    return re_alt(std::move(parts));
}

bool is_nullable(const Regex& r) {
    switch (r->kind) {
        case RegexKind::kEmpty: return true;
        case RegexKind::kNothing:
        case RegexKind::kByte: return false;
        case RegexKind::kConcat:
            return std::all_of(r->items.begin(), r->items.end(), [](const Regex& x) { return is_nullable(x); });
        case RegexKind::kAlt:
            return std::any_of(r->items.begin(), r->items.end(), [](const Regex& x) { return is_nullable(x); });
        case RegexKind::kRepeat: return r->min == 0 || is_nullable(r->items[0]);
    }
    return false;
}

std::string regex_key(const Regex& r) {
    switch (r->kind) {
        case RegexKind::kEmpty: return "e";
        case RegexKind::kNothing: return "n";
        case RegexKind::kByte: {
            std::string s = "b";
            for (uint64_t w : r->bytes.words) s += std::to_string(w) + ".";
            return s;
        }
        case RegexKind::kConcat:
        case RegexKind::kAlt: {
            std::string s = r->kind == RegexKind::kConcat ? "(c" : "(a";
            for (const Regex& x : r->items) s += " " + regex_key(x);
            return s + ")";
        }
        case RegexKind::kRepeat:
            return "(r" + std::to_string(r->min) + "," + std::to_string(r->max) + " " + regex_key(r->items[0]) + ")";
    }
    return "";
}

}  // namespace hichat::grammar
