// parse_regex: a recursive-descent parser for the ECMAScript subset of docs/grammar.md.
#include <algorithm>
#include <cctype>
#include <string>

#include "grammar/char_regex.h"

namespace hichat::grammar {
namespace {

const CodePointRanges kDigit = {{'0', '9'}};
const CodePointRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodePointRanges kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                                {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
                                {0xFEFF, 0xFEFF}};
const CodePointRanges kDot = {{0, 9}, {11, 12}, {14, 0x2027}, {0x202A, 0x10FFFF}};

class RegexParser {
public:
    RegexParser(std::string_view src, bool search, int max_repeat)
        : src_(src), search_(search), max_repeat_(max_repeat) {}

    Result<CharRegex> parse() {
        std::vector<CharRegex> alts;
        while (true) {
            bool anchored_start = eat('^');
            auto seq = parse_concat(/*top=*/true);
            if (!error_.empty()) return invalid_argument(error_);
            bool anchored_end = trailing_dollar_;
            trailing_dollar_ = false;
            std::vector<CharRegex> parts;
            const CharRegex any = cre_repeat(cre_set({{0, 0x10FFFF}}), 0, -1);
            if (search_ && !anchored_start) parts.push_back(any);
            parts.push_back(seq);
            if (search_ && !anchored_end) parts.push_back(any);
            alts.push_back(cre_concat(std::move(parts)));
            if (!eat('|')) break;
        }
        if (pos_ < src_.size()) return invalid_argument(at("unmatched ')'", pos_));
        return cre_alt(std::move(alts));
    }

private:
    std::string at(const std::string& what, size_t offset) const {
        return "regex: " + what + " at offset " + std::to_string(offset);
    }
    void fail(const std::string& what, size_t offset) {
        if (error_.empty()) error_ = at(what, offset);
    }
    bool eat(char c) {
        if (pos_ < src_.size() && src_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    bool done() const { return pos_ >= src_.size() || !error_.empty(); }

    CharRegex parse_alternation() {
        std::vector<CharRegex> alts{parse_concat(false)};
        while (error_.empty() && eat('|')) alts.push_back(parse_concat(false));
        return cre_alt(std::move(alts));
    }

    CharRegex parse_concat(bool top) {
        std::vector<CharRegex> items;
        while (!done() && src_[pos_] != '|' && src_[pos_] != ')') {
            if (src_[pos_] == '$') {
                const size_t p = pos_++;
                const bool at_edge = pos_ >= src_.size() || src_[pos_] == '|' || (src_[pos_] == ')' && top);
                if (!top || !at_edge) fail("anchor '$' inside the pattern is not supported", p);
                trailing_dollar_ = true;
                break;
            }
            if (src_[pos_] == '^') {
                fail("anchor '^' inside the pattern is not supported", pos_);
                break;
            }
            CharRegex atom = parse_atom();
            if (!error_.empty()) break;
            items.push_back(parse_quantifier(std::move(atom)));
        }
        if (items.empty()) return cre_empty();
        return cre_concat(std::move(items));
    }

    // Reads digits; returns -1 if none.
    long read_number() {
        const size_t start = pos_;
        long v = 0;
        while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
            v = std::min<long>(v * 10 + (src_[pos_] - '0'), 1L << 30);
            ++pos_;
        }
        return pos_ == start ? -1 : v;
    }

    CharRegex parse_quantifier(CharRegex atom) {
        while (pos_ < src_.size()) {
            const size_t start = pos_;
            long min = 0, max = -1;
            const char c = src_[pos_];
            if (c == '*') {
                ++pos_;
            } else if (c == '+') {
                ++pos_;
                min = 1;
            } else if (c == '?') {
                ++pos_;
                max = 1;
            } else if (c == '{') {
                ++pos_;
                min = read_number();
                if (min < 0) {  // not a quantifier: '{' is a literal (Annex B)
                    pos_ = start;
                    return atom;
                }
                max = min;
                if (eat(',')) max = read_number();
                if (!eat('}')) {
                    pos_ = start;
                    return atom;
                }
                if (max >= 0 && max < min) {
                    fail("quantifier {" + std::to_string(min) + "," + std::to_string(max) + "} has max < min", start);
                    return atom;
                }
                if (min > max_repeat_ || max > max_repeat_) {
                    fail("repeat count over the limit of " + std::to_string(max_repeat_), start);
                    return atom;
                }
            } else {
                return atom;
            }
            eat('?');  // lazy quantifiers match the same language
            if (pos_ < src_.size() && (src_[pos_] == '*' || src_[pos_] == '+' || src_[pos_] == '?')) {
                fail("nothing to repeat", pos_);
                return atom;
            }
            atom = cre_repeat(std::move(atom), static_cast<int>(min), static_cast<int>(max));
        }
        return atom;
    }

    CharRegex parse_atom() {
        const size_t start = pos_;
        const char c = src_[pos_];
        if (c == '(') {
            ++pos_;
            if (eat('?')) {
                if (eat(':')) {
                } else if (pos_ < src_.size() && (src_[pos_] == '=' || src_[pos_] == '!')) {
                    fail("lookahead is not supported", start);
                    return cre_empty();
                } else if (eat('<')) {
                    if (pos_ < src_.size() && (src_[pos_] == '=' || src_[pos_] == '!')) {
                        fail("lookbehind is not supported", start);
                        return cre_empty();
                    }
                    while (pos_ < src_.size() && src_[pos_] != '>') ++pos_;  // named group
                    if (!eat('>')) {
                        fail("unterminated group name", start);
                        return cre_empty();
                    }
                } else {
                    fail("group flags (?...) are not supported", start);
                    return cre_empty();
                }
            }
            CharRegex inner = parse_alternation();
            if (!error_.empty()) return inner;
            if (!eat(')')) fail("missing ')'", start);
            return inner;
        }
        if (c == '*' || c == '+' || c == '?') {
            fail("nothing to repeat", start);
            return cre_empty();
        }
        if (c == '[') return parse_class();
        if (c == '.') {
            ++pos_;
            return cre_set(kDot);
        }
        if (c == '\\') {
            CodePointRanges set;
            if (!parse_escape(false, set)) return cre_empty();
            return cre_set(std::move(set));
        }
        size_t i = pos_;
        std::string_view one = src_.substr(i, 1);
        // Take one whole UTF-8 character.
        const auto b0 = static_cast<uint8_t>(c);
        const size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 1;
        one = src_.substr(i, len);
        pos_ += one.size();
        return cre_literal(one);
    }

    static uint32_t hex_value(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return 0xFFFFFFFF;
    }

    bool read_hex(size_t digits, uint32_t& out) {
        out = 0;
        if (pos_ + digits > src_.size()) return false;
        for (size_t k = 0; k < digits; ++k) {
            const uint32_t v = hex_value(src_[pos_ + k]);
            if (v > 15) return false;
            out = out * 16 + v;
        }
        pos_ += digits;
        return true;
    }

    // After a backslash (at pos_): the set it stands for. In a class, \b is a backspace.
    bool parse_escape(bool in_class, CodePointRanges& set) {
        const size_t start = pos_++;
        if (pos_ >= src_.size()) {
            fail("trailing backslash", start);
            return false;
        }
        const char e = src_[pos_++];
        auto one = [&](uint32_t cp) { set.emplace_back(cp, cp); };
        switch (e) {
            case 'd': set = kDigit; return true;
            case 'D': set = invert_ranges(kDigit); return true;
            case 'w': set = kWord; return true;
            case 'W': set = invert_ranges(kWord); return true;
            case 's': set = kSpace; return true;
            case 'S': set = invert_ranges(kSpace); return true;
            case 'n': one('\n'); return true;
            case 'r': one('\r'); return true;
            case 't': one('\t'); return true;
            case 'f': one('\f'); return true;
            case 'v': one('\v'); return true;
            case '0': one(0); return true;
            case 'b':
                if (in_class) {
                    one('\b');
                    return true;
                }
                fail("word boundary \\b is not supported", start);
                return false;
            case 'B': fail("word boundary \\B is not supported", start); return false;
            case 'k': fail("named backreference \\k is not supported", start); return false;
            case 'p':
            case 'P': fail("unicode property escape \\" + std::string(1, e) + " is not supported", start); return false;
            case 'c':
                if (pos_ < src_.size() && std::isalpha(static_cast<unsigned char>(src_[pos_]))) {
                    one(static_cast<uint32_t>(src_[pos_++]) % 32);
                    return true;
                }
                one('\\');
                pos_ = start + 1;
                return true;
            case 'x': {
                uint32_t v;
                if (!read_hex(2, v)) {
                    fail("bad \\x escape", start);
                    return false;
                }
                one(v);
                return true;
            }
            case 'u': {
                uint32_t v;
                if (eat('{')) {
                    const size_t digits_start = pos_;
                    while (pos_ < src_.size() && hex_value(src_[pos_]) <= 15) ++pos_;
                    const std::string_view digits = src_.substr(digits_start, pos_ - digits_start);
                    if (digits.empty() || digits.size() > 6 || !eat('}')) {
                        fail("bad \\u{...} escape", start);
                        return false;
                    }
                    v = 0;
                    for (char h : digits) v = v * 16 + hex_value(h);
                } else if (!read_hex(4, v)) {
                    fail("bad \\u escape", start);
                    return false;
                }
                if (v > 0x10FFFF) {
                    fail("code point out of range", start);
                    return false;
                }
                one(v);
                return true;
            }
            default:
                if (e >= '1' && e <= '9') {
                    fail(std::string("backreference \\") + e + " is not supported", start);
                    return false;
                }
                one(static_cast<uint8_t>(e));
                return true;
        }
    }

    // One class member's code point (a literal or an escape that is a single code point).
    bool class_atom(CodePointRanges& set) {
        if (src_[pos_] == '\\') return parse_escape(true, set);
        size_t i = pos_;
        const auto b0 = static_cast<uint8_t>(src_[i]);
        const size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 1;
        CharRegex lit = cre_literal(src_.substr(i, len));
        pos_ += len;
        set = lit->kind == CharRegexKind::kSet ? lit->set : CodePointRanges{{b0, b0}};
        return true;
    }

    CharRegex parse_class() {
        const size_t start = pos_++;
        const bool negated = eat('^');
        CodePointRanges set;
        bool first = true;
        while (true) {
            if (pos_ >= src_.size()) {
                fail("unterminated character class", start);
                return cre_empty();
            }
            if (src_[pos_] == ']' && !first) break;
            if (src_[pos_] == ']' && first) {  // ECMAScript: [] matches nothing, [^] anything
                break;
            }
            first = false;
            CodePointRanges lo;
            const size_t lo_pos = pos_;
            if (!class_atom(lo)) return cre_empty();
            if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
                ++pos_;
                CodePointRanges hi;
                if (!class_atom(hi)) return cre_empty();
                if (lo.size() != 1 || hi.size() != 1 || lo[0].first != lo[0].second || hi[0].first != hi[0].second) {
                    fail("class range with a class escape", lo_pos);
                    return cre_empty();
                }
                if (hi[0].first < lo[0].first) {
                    fail("class range out of order", lo_pos);
                    return cre_empty();
                }
                set.emplace_back(lo[0].first, hi[0].first);
            } else {
                set.insert(set.end(), lo.begin(), lo.end());
            }
        }
        ++pos_;  // ']'
        set = normalize_ranges(std::move(set));
        return cre_set(negated ? invert_ranges(set) : set);
    }

    std::string_view src_;
    bool search_;
    int max_repeat_;
    size_t pos_ = 0;
    bool trailing_dollar_ = false;
    std::string error_;
};

}  // namespace

Result<CharRegex> parse_regex(std::string_view pattern, bool search, int max_repeat) {
    return RegexParser(pattern, search, max_repeat).parse();
}

}  // namespace hichat::grammar
