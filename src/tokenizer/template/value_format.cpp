#include "tokenizer/template/value_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "tokenizer/template/unicode_text.h"

namespace hichat::tokenizer::jinja {

std::string format_js_number(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    if (d == 0) return "0";
    if (d < 0) return "-" + format_js_number(-d);
    // Shortest round-trip digits, as both JS and std::to_chars produce them.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
    const std::string sci(buf, res.ptr);
    const size_t e_pos = sci.find('e');
    std::string digits = sci.substr(0, e_pos);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int n = std::stoi(sci.substr(e_pos + 1)) + 1;  // decimal point position
    const int k = static_cast<int>(digits.size());
    if (k <= n && n <= 21) return digits + std::string(n - k, '0');
    if (0 < n && n <= 21) return digits.substr(0, n) + "." + digits.substr(n);
    if (-6 < n && n <= 0) return "0." + std::string(-n, '0') + digits;
    std::string out = digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += (n - 1 >= 0) ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
    return out;
}

std::string format_float_value(double d) {
    if (d == 0 && std::signbit(d)) return "-0.0";
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e21) {
        char buf[64];
        const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed, 0);
        return std::string(buf, res.ptr) + ".0";
    }
    return format_js_number(d);
}

Result<std::string> to_display_string(const Value& v) {
    switch (v.kind()) {
        case ValueKind::kUndefined: return std::string("undefined");
        case ValueKind::kNone: return std::string("null");
        case ValueKind::kBool: return std::string(v.as_bool() ? "true" : "false");
        case ValueKind::kInt: return std::to_string(v.as_int());
        case ValueKind::kFloat: return format_float_value(v.as_double());
        case ValueKind::kString: return v.as_string();
        case ValueKind::kList:
        case ValueKind::kDict:
        case ValueKind::kNamespace: return to_json(v, JsonOptions{}, /*undefined_as_null=*/false);
        case ValueKind::kFunction: break;
    }
    return invalid_argument("cannot convert callable '" + v.as_function().name + "' to a string");
}

Result<std::string> to_js_string(const Value& v) {
    switch (v.kind()) {
        case ValueKind::kUndefined:
        case ValueKind::kNone: return std::string();
        case ValueKind::kFloat: return format_js_number(v.as_double());
        case ValueKind::kList: {
            std::string out;
            for (size_t i = 0; i < v.as_list().items.size(); ++i) {
                Result<std::string> item = to_display_string(v.as_list().items[i]);
                if (!item.ok()) return item.status();
                if (i > 0) out += ',';
                out += *item;
            }
            return out;
        }
        case ValueKind::kDict:
        case ValueKind::kNamespace: return std::string("[object Map]");
        default: return to_display_string(v);
    }
}

namespace {

void append_unicode_escape(uint32_t unit, std::string& out) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(unit));
    out += buf;
}

}  // namespace

void append_json_string(std::string_view s, bool ensure_ascii, std::string& out) {
    out += '"';
    for (size_t pos = 0; pos < s.size();) {
        const size_t begin = pos;
        const uint32_t cp = decode_utf8(s, &pos);
        const bool invalid_byte = cp >= 0x80 && pos - begin == 1;
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            default: break;
        }
        if (cp < 0x20 || (!invalid_byte && cp >= 0xD800 && cp <= 0xDFFF)) {
            append_unicode_escape(cp, out);  // controls and lone surrogates
        } else if (ensure_ascii && cp >= 0x7F && !invalid_byte) {
            if (cp > 0xFFFF) {
                append_unicode_escape(0xD800 + ((cp - 0x10000) >> 10), out);
                append_unicode_escape(0xDC00 + ((cp - 0x10000) & 0x3FF), out);
            } else {
                append_unicode_escape(cp, out);
            }
        } else {
            out.append(s.substr(begin, pos - begin));
        }
    }
    out += '"';
}

namespace {

Status append_json(const Value& v, const JsonOptions& opt, bool undefined_as_null, int depth, std::string& out) {
    std::string item_sep = ", ", key_sep = ": ";
    if (opt.separators) {
        item_sep = opt.separators->first;
        key_sep = opt.separators->second;
    } else if (opt.indent > 0) {
        item_sep = ",";
    }
    const std::string base_pad = "\n" + std::string(static_cast<size_t>(opt.indent) * depth, ' ');
    const std::string child_pad = base_pad + std::string(opt.indent, ' ');
    switch (v.kind()) {
        case ValueKind::kUndefined: out += undefined_as_null ? "null" : "undefined"; return ok_status();
        case ValueKind::kNone: out += "null"; return ok_status();
        case ValueKind::kBool: out += v.as_bool() ? "true" : "false"; return ok_status();
        case ValueKind::kInt: out += std::to_string(v.as_int()); return ok_status();
        case ValueKind::kFloat:
            out += std::isfinite(v.as_double()) ? format_js_number(v.as_double()) : "null";
            return ok_status();
        case ValueKind::kString: append_json_string(v.as_string(), opt.ensure_ascii, out); return ok_status();
        case ValueKind::kList: {
            if (v.is_tuple()) return invalid_argument("cannot convert a tuple to JSON");
            const auto& items = v.as_list().items;
            const bool pretty = opt.indent > 0 && !items.empty();
            out += '[';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i > 0) out += item_sep;
                if (pretty) out += child_pad;
                HICHAT_RETURN_IF_ERROR(append_json(items[i], opt, undefined_as_null, depth + 1, out));
            }
            if (pretty) out += base_pad;
            out += ']';
            return ok_status();
        }
        case ValueKind::kDict:
        case ValueKind::kNamespace: {
            std::vector<const std::pair<std::string, Value>*> entries;
            for (const auto& e : v.as_dict().entries) entries.push_back(&e);
            if (opt.sort_keys)
                std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
            const bool pretty = opt.indent > 0 && !entries.empty();
            out += '{';
            for (size_t i = 0; i < entries.size(); ++i) {
                if (i > 0) out += item_sep;
                if (pretty) out += child_pad;
                append_json_string(entries[i]->first, opt.ensure_ascii, out);
                out += key_sep;
                HICHAT_RETURN_IF_ERROR(append_json(entries[i]->second, opt, undefined_as_null, depth + 1, out));
            }
            if (pretty) out += base_pad;
            out += '}';
            return ok_status();
        }
        case ValueKind::kFunction: break;
    }
    return invalid_argument("cannot convert callable '" + v.as_function().name + "' to JSON");
}

}  // namespace

Result<std::string> to_json(const Value& v, const JsonOptions& options, bool undefined_as_null) {
    std::string out;
    HICHAT_RETURN_IF_ERROR(append_json(v, options, undefined_as_null, 0, out));
    return out;
}

}  // namespace hichat::tokenizer::jinja
