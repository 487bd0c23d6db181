#include "grammar/gbnf_parser.h"

#include <map>
#include <string>

#include "grammar/char_regex.h"

namespace hichat::grammar {
namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
public:
    GbnfParser(std::string_view src, const CompileLimits& limits) : src_(src), limits_(limits) {}

    Result<GrammarIr> parse() {
        skip_space(true);
        while (pos_ < src_.size() && error_.empty()) {
            parse_rule();
            skip_space(true);
        }
        if (!error_.empty()) return invalid_argument(error_);
        for (const auto& [name, ref_pos] : first_use_) {
            if (ir_.rules()[rule_id(name)].body < 0) return invalid_argument(at("undefined rule '" + name + "'", ref_pos));
        }
        auto root = rules_.find("root");
        if (root == rules_.end()) return invalid_argument("gbnf: no 'root' rule");
        ir_.set_root(root->second);
        return std::move(ir_);
    }

private:
    std::string at(const std::string& what, size_t offset) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < offset && i < src_.size(); ++i) {
            if (src_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        return "gbnf: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(col);
    }
    void fail(const std::string& what, size_t offset) {
        if (error_.empty()) error_ = at(what, offset);
    }

    // Skips blanks and comments; newlines too when newline_ok.
    void skip_space(bool newline_ok) {
        while (pos_ < src_.size()) {
            const char c = src_[pos_];
            if (c == '#') {
                while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
            } else if (c == ' ' || c == '\t' || c == '\r' || (newline_ok && c == '\n')) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    // After a rule's line ends: does the next non-blank line continue it with '|'?
    bool continues_with_bar() {
        size_t save = pos_;
        skip_space(true);
        if (pos_ < src_.size() && src_[pos_] == '|') return true;
        pos_ = save;
        return false;
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        return std::string(src_.substr(start, pos_ - start));
    }

    int32_t rule_id(const std::string& name) {
        auto it = rules_.find(name);
        if (it != rules_.end()) return it->second;
        const int32_t id = ir_.new_rule(name);
        rules_.emplace(name, id);
        return id;
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name();
        if (name.empty()) return fail("expected a rule name", start);
        skip_space(false);
        if (src_.substr(pos_, 3) != "::=") return fail("expected '::='", pos_);
        pos_ += 3;
        skip_space(true);
        const int32_t id = rule_id(name);
        if (ir_.rules()[id].body >= 0) return fail("rule '" + name + "' defined twice", start);
        const ExprId body = parse_alternatives(0);
        if (!error_.empty()) return;
        ir_.define(id, body);
        if (pos_ < src_.size() && src_[pos_] != '\n') fail("unexpected character '" + std::string(1, src_[pos_]) + "'", pos_);
    }

    ExprId parse_alternatives(int depth) {
        std::vector<ExprId> alts{parse_sequence(depth)};
        while (error_.empty()) {
            if (pos_ < src_.size() && src_[pos_] == '|') {
                ++pos_;
                skip_space(true);
                alts.push_back(parse_sequence(depth));
            } else if (depth == 0 && continues_with_bar()) {
                continue;
            } else {
                break;
            }
        }
        return ir_.alt(std::move(alts));
    }

    ExprId parse_sequence(int depth) {
        std::vector<ExprId> items;
        while (pos_ < src_.size() && error_.empty()) {
            const char c = src_[pos_];
            if (c == '|' || c == ')' || c == '\n') break;
            ExprId item = parse_primary(depth);
            if (!error_.empty()) break;
            items.push_back(parse_quantifiers(item));
            skip_space(depth > 0);
        }
        return ir_.seq(std::move(items));
    }

    ExprId parse_quantifiers(ExprId item) {
        while (pos_ < src_.size() && error_.empty()) {
            const char c = src_[pos_];
            if (c == '*') {
                ++pos_;
                item = ir_.repeat(item, 0, -1);
            } else if (c == '+') {
                ++pos_;
                item = ir_.repeat(item, 1, -1);
            } else if (c == '?') {
                ++pos_;
                item = ir_.repeat(item, 0, 1);
            } else if (c == '{') {
                const size_t start = pos_++;
                skip_space(false);
                const long min = read_number();
                if (min < 0) {
                    fail("expected a number in '{m,n}'", start);
                    return item;
                }
                long max = min;
                skip_space(false);
                if (pos_ < src_.size() && src_[pos_] == ',') {
                    ++pos_;
                    skip_space(false);
                    max = read_number();
                    skip_space(false);
                }
                if (pos_ >= src_.size() || src_[pos_] != '}') {
                    fail("expected '}'", pos_);
                    return item;
                }
                ++pos_;
                if ((max >= 0 && max < min) || min > limits_.max_repeat || max > limits_.max_repeat) {
                    fail("bad repeat count (max < min or over " + std::to_string(limits_.max_repeat) + ")", start);
                    return item;
                }
                item = ir_.repeat(item, static_cast<int>(min), static_cast<int>(max));
            } else {
                break;
            }
        }
        return item;
    }

    long read_number() {
        const size_t start = pos_;
        long v = 0;
        while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
            v = std::min<long>(v * 10 + (src_[pos_] - '0'), 1L << 30);
            ++pos_;
        }
        return pos_ == start ? -1 : v;
    }

    // One character of a literal or class: an escape or a UTF-8 character.
    bool read_char(uint32_t& cp) {
        const size_t start = pos_;
        if (pos_ >= src_.size()) return false;
        if (src_[pos_] == '\\') {
            ++pos_;
            if (pos_ >= src_.size()) {
                fail("trailing backslash", start);
                return false;
            }
            const char e = src_[pos_++];
            auto hex = [&](size_t n) {
                cp = 0;
                for (size_t k = 0; k < n; ++k) {
                    if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_]))) {
                        fail("bad hex escape", start);
                        return false;
                    }
                    cp = cp * 16 + static_cast<uint32_t>(std::stoi(std::string(1, src_[pos_++]), nullptr, 16));
                }
                return true;
            };
            switch (e) {
                case 'n': cp = '\n'; return true;
                case 'r': cp = '\r'; return true;
                case 't': cp = '\t'; return true;
                case '\\': cp = '\\'; return true;
                case '"': cp = '"'; return true;
                case '[': cp = '['; return true;
                case ']': cp = ']'; return true;
                case '-': cp = '-'; return true;
                case 'x': return hex(2);
                case 'u': return hex(4);
                case 'U': return hex(8);
                default: fail(std::string("unknown escape \\") + e, start); return false;
            }
        }
        const auto b0 = static_cast<uint8_t>(src_[pos_]);
        const size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 1;
        CharRegex lit = cre_literal(src_.substr(pos_, len));
        pos_ += len;
        cp = lit->kind == CharRegexKind::kSet ? lit->set[0].first : b0;
        return true;
    }

    ExprId char_lexeme(CodePointRanges set) { return ir_.lexeme(to_utf8_regex(cre_set(std::move(set)))); }

    ExprId parse_primary(int depth) {
        const size_t start = pos_;
        const char c = src_[pos_];
        if (c == '"') {
            ++pos_;
            std::vector<ExprId> chars;
            while (true) {
                if (pos_ >= src_.size() || src_[pos_] == '\n') {
                    fail("unterminated string literal", start);
                    return ir_.empty();
                }
                if (src_[pos_] == '"') break;
                uint32_t cp;
                if (!read_char(cp)) return ir_.empty();
                chars.push_back(char_lexeme({{cp, cp}}));
            }
            ++pos_;
            return ir_.seq(std::move(chars));
        }
        if (c == '[') {
            ++pos_;
            const bool negated = pos_ < src_.size() && src_[pos_] == '^';
            if (negated) ++pos_;
            CodePointRanges set;
            while (true) {
                if (pos_ >= src_.size() || src_[pos_] == '\n') {
                    fail("unterminated character class", start);
                    return ir_.empty();
                }
                if (src_[pos_] == ']') break;
                uint32_t lo, hi;
                if (!read_char(lo)) return ir_.empty();
                hi = lo;
                if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
                    ++pos_;
                    if (!read_char(hi)) return ir_.empty();
                    if (hi < lo) {
                        fail("class range out of order", start);
                        return ir_.empty();
                    }
                }
                set.emplace_back(lo, hi);
            }
            ++pos_;
            set = normalize_ranges(std::move(set));
            return char_lexeme(negated ? invert_ranges(set) : set);
        }
        if (c == '.') {
            ++pos_;
            return char_lexeme({{0, 0x10FFFF}});
        }
        if (c == '(') {
            if (depth + 1 > limits_.max_nesting_depth) {
                fail("groups nested too deep", start);
                return ir_.empty();
            }
            ++pos_;
            skip_space(true);
            const ExprId inner = parse_alternatives(depth + 1);
            skip_space(true);
            if (pos_ >= src_.size() || src_[pos_] != ')') {
                fail("expected ')'", pos_);
                return inner;
            }
            ++pos_;
            return inner;
        }
        if (is_name_char(c)) {
            const std::string name = parse_name();
            first_use_.emplace(name, start);
            return ir_.ref(rule_id(name));
        }
        fail("unexpected character '" + std::string(1, c) + "'", start);
        return ir_.empty();
    }

    std::string_view src_;
    const CompileLimits& limits_;
    size_t pos_ = 0;
    GrammarIr ir_;
    std::map<std::string, int32_t> rules_;
    std::map<std::string, size_t> first_use_;  // rule name -> offset of its first reference
    std::string error_;
};

}  // namespace

Result<GrammarIr> parse_gbnf(std::string_view text, const CompileLimits& limits) {
    return GbnfParser(text, limits).parse();
}

}  // namespace hichat::grammar
