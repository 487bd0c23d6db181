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

}  // namespace hichat::api
