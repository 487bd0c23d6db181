#include "api/json_scan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tokenizer/utf8.h"

namespace hichat::api {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// \uXXXX at text[at] (the backslash): the code unit, or -1 when cut short, -2 when not hex.
int32_t read_u_escape(std::string_view text, size_t at) {
    if (at + 6 > text.size()) {
        for (size_t i = at + 2; i < text.size(); ++i) {
            if (hex_value(text[i]) < 0) return -2;
        }
        return -1;
    }
    int32_t v = 0;
    for (size_t i = at + 2; i < at + 6; ++i) {
        const int h = hex_value(text[i]);
        if (h < 0) return -2;
        v = v * 16 + h;
    }
    return v;
}

// The first offset after the "\\u" at `at` that is not a hex digit.
size_t first_non_hex(std::string_view text, size_t at) {
    size_t i = at + 2;
    while (i < text.size() && hex_value(text[i]) >= 0) ++i;
    return i;
}

JsonScan scan_number(std::string_view text, size_t at, size_t& end) {
    const size_t n = text.size();
    size_t j = at;
    auto digits = [&] {
        if (j == n) return JsonScan::kIncomplete;
        if (!is_digit(text[j])) {
            end = j;
            return JsonScan::kInvalid;
        }
        while (j < n && is_digit(text[j])) ++j;
        return JsonScan::kComplete;
    };
    if (text[j] == '-') ++j;
    if (j == n) return JsonScan::kIncomplete;
    if (text[j] == '0') {
        ++j;
    } else if (JsonScan r = digits(); r != JsonScan::kComplete) {
        return r;
    }
    if (j < n && text[j] == '.') {
        ++j;
        if (JsonScan r = digits(); r != JsonScan::kComplete) return r;
    }
    if (j < n && (text[j] == 'e' || text[j] == 'E')) {
        ++j;
        if (j < n && (text[j] == '+' || text[j] == '-')) ++j;
        if (JsonScan r = digits(); r != JsonScan::kComplete) return r;
    }
    if (j == n) return JsonScan::kIncomplete;  // more digits may follow
    end = j;
    return JsonScan::kComplete;
}

JsonScan scan_literal(std::string_view text, size_t at, size_t& end) {
    for (std::string_view word : {"true", "false", "null"}) {
        if (text[at] != word[0]) continue;
        const std::string_view have = text.substr(at, word.size());
        if (have != word.substr(0, have.size())) {
            end = at + static_cast<size_t>(std::mismatch(have.begin(), have.end(), word.begin()).first - have.begin());
            return JsonScan::kInvalid;
        }
        if (have.size() < word.size()) return JsonScan::kIncomplete;
        end = at + word.size();
        return JsonScan::kComplete;
    }
    end = at;
    return JsonScan::kInvalid;
}

JsonScan scan_scalar(std::string_view text, size_t at, size_t& end) {
    const char c = text[at];
    if (c == '"') return scan_json_string(text, at, end);
    if (c == '-' || is_digit(c)) return scan_number(text, at, end);
    return scan_literal(text, at, end);
}

}  // namespace

size_t skip_json_space(std::string_view text, size_t at) {
    while (at < text.size() && is_space(text[at])) ++at;
    return at;
}

JsonScan scan_json_string(std::string_view text, size_t at, size_t& end, std::string* decoded) {
    if (at >= text.size()) return JsonScan::kIncomplete;
    auto invalid = [&](size_t where) {
        end = where;
        return JsonScan::kInvalid;
    };
    if (text[at] != '"') return invalid(at);
    for (size_t i = at + 1; i < text.size();) {
        const char c = text[i];
        if (c == '"') {
            end = i + 1;
            return JsonScan::kComplete;
        }
        if (static_cast<unsigned char>(c) < 0x20) return invalid(i);
        if (c != '\\') {
            if (decoded != nullptr) *decoded += c;
            ++i;
            continue;
        }
        if (i + 1 >= text.size()) return JsonScan::kIncomplete;
        const char e = text[i + 1];
        if (e != 'u') {
            static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
            const size_t k = kFrom.find(e);
            if (k == std::string_view::npos) return invalid(i + 1);
            if (decoded != nullptr) *decoded += kTo[k];
            i += 2;
            continue;
        }
        const int32_t unit = read_u_escape(text, i);
        if (unit < 0) return unit == -1 ? JsonScan::kIncomplete : invalid(first_non_hex(text, i));
        uint32_t cp = static_cast<uint32_t>(unit);
        // Surrogates come in pairs (a high one, then "\\u" and a low one), as the parsers downstream
        // (nlohmann) demand. A bad pair is invalid at the byte that made it so (an escape's last digit).
        if (cp >= 0xdc00 && cp < 0xe000) return invalid(i + 5);
        i += 6;
        if (cp >= 0xd800 && cp < 0xdc00) {
            if (i >= text.size() || (text[i] == '\\' && i + 1 >= text.size())) return JsonScan::kIncomplete;
            if (text[i] != '\\') return invalid(i);
            if (text[i + 1] != 'u') return invalid(i + 1);
            const int32_t low = read_u_escape(text, i);
            if (low < 0) return low == -1 ? JsonScan::kIncomplete : invalid(first_non_hex(text, i));
            if (low < 0xdc00 || low >= 0xe000) return invalid(i + 5);
            cp = 0x10000 + ((cp - 0xd800) << 10) + (static_cast<uint32_t>(low) - 0xdc00);
            i += 6;
        }
        if (decoded != nullptr) tokenizer::append_utf8(static_cast<char32_t>(cp), *decoded);
    }
    return JsonScan::kIncomplete;
}

JsonScan scan_json_value(std::string_view text, size_t at, size_t& end) {
    enum class Expect { kValue, kFirstValueOrClose, kFirstKeyOrClose, kKey, kColon, kCommaOrClose };
    std::vector<char> open;  // '{' or '[' of the containers around the position
    auto invalid_at = [&](size_t where) {
        end = where;
        return JsonScan::kInvalid;
    };
    Expect expect = Expect::kValue;
    size_t i = at;
    for (;;) {
        i = skip_json_space(text, i);
        if (i >= text.size()) return JsonScan::kIncomplete;
        const char c = text[i];
        bool value_done = false;
        switch (expect) {
            case Expect::kFirstValueOrClose:
                if (c == ']') {
                    open.pop_back();
                    ++i;
                    value_done = true;
                    break;
                }
                [[fallthrough]];
            case Expect::kValue:
                if (c == '{' || c == '[') {
                    open.push_back(c);
                    ++i;
                    expect = c == '{' ? Expect::kFirstKeyOrClose : Expect::kFirstValueOrClose;
                    break;
                }
                if (JsonScan r = scan_scalar(text, i, end); r != JsonScan::kComplete) return r;
                i = end;
                value_done = true;
                break;
            case Expect::kFirstKeyOrClose:
                if (c == '}') {
                    open.pop_back();
                    ++i;
                    value_done = true;
                    break;
                }
                [[fallthrough]];
            case Expect::kKey:
                if (c != '"') return invalid_at(i);
                if (JsonScan r = scan_json_string(text, i, end); r != JsonScan::kComplete) return r;
                i = end;
                expect = Expect::kColon;
                break;
            case Expect::kColon:
                if (c != ':') return invalid_at(i);
                ++i;
                expect = Expect::kValue;
                break;
            case Expect::kCommaOrClose: {
                const char top = open.back();
                if (c == ',') {
                    ++i;
                    expect = top == '{' ? Expect::kKey : Expect::kValue;
                } else if (c == (top == '{' ? '}' : ']')) {
                    open.pop_back();
                    ++i;
                    value_done = true;
                } else {
                    return invalid_at(i);
                }
                break;
            }
        }
        if (!value_done) continue;
        if (open.empty()) {
            end = i;
            return JsonScan::kComplete;
        }
        expect = Expect::kCommaOrClose;
    }
}

void JsonCompactor::append(std::string_view piece, std::string& out) {
    for (char c : piece) {
        if (in_string_) {
            out += c;
            if (escaped_) {
                escaped_ = false;
            } else if (c == '\\') {
                escaped_ = true;
            } else if (c == '"') {
                in_string_ = false;
            }
        } else if (!is_space(c)) {
            out += c;
            in_string_ = c == '"';
        }
    }
}

}  // namespace hichat::api
