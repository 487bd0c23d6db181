#include "api/http/http_request.h"

namespace hichat::api {
namespace {

char to_lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool equals_ignore_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (to_lower_ascii(a[i]) != to_lower_ascii(b[i])) return false;
    }
    return true;
}

std::optional<std::string_view> HttpHeaders::get(std::string_view name) const {
    for (const auto& [field, value] : fields_) {
        if (equals_ignore_case(field, name)) return std::string_view(value);
    }
    return std::nullopt;
}

std::pair<std::string, std::string> split_target(std::string_view target) {
    size_t q = target.find('?');
    if (q == std::string_view::npos) return {std::string(target), std::string()};
    return {std::string(target.substr(0, q)), std::string(target.substr(q + 1))};
}

std::pair<std::string, std::string> peek_request_line(std::string_view bytes) {
    bytes = bytes.substr(0, bytes.find_first_of("\r\n"));
    size_t method_end = bytes.find(' ');
    if (method_end == std::string_view::npos) return {std::string(bytes), std::string()};
    std::string_view rest = bytes.substr(method_end + 1);
    return {std::string(bytes.substr(0, method_end)), std::string(rest.substr(0, rest.find(' ')))};
}

std::optional<std::string> percent_decode(std::string_view s) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

}  // namespace hichat::api
