#include "api/http/cors.h"

#include "api/http/http_error.h"
#include "api/http/response_writer.h"

namespace hichat::api {
namespace {

bool is_scheme_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
           c == '.';
}

// host[:port] of an origin: no path, query, fragment, user info or white space; a port is digits.
bool is_host_port(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (c == '/' || c == '?' || c == '#' || c == '@' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
            return false;
        }
    }
    size_t colon = s.rfind(':');
    size_t bracket = s.rfind(']');  // IPv6 literal "[::1]:8080"
    if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket)) return true;
    std::string_view port = s.substr(colon + 1);
    if (colon == 0 || port.empty() || port.size() > 5) return false;
    for (char c : port) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

// "Authorization, Content-Type" plus each requested header not among them yet.
std::string allowed_headers(std::string_view requested) {
    std::string out(kCorsBaseAllowedHeaders);
    while (!requested.empty()) {
        size_t comma = requested.find(',');
        std::string_view name = requested.substr(0, comma);
        requested = comma == std::string_view::npos ? std::string_view() : requested.substr(comma + 1);
        while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
        if (name.empty() || equals_ignore_case(name, "Authorization") || equals_ignore_case(name, "Content-Type")) {
            continue;
        }
        out.append(", ").append(name);
    }
    return out;
}

}  // namespace

Status check_allowed_origin(std::string_view origin) {
    if (origin == "*") return ok_status();
    const std::string quoted = "'" + std::string(origin) + "'";
    size_t sep = origin.find("://");
    bool scheme_ok = sep != std::string_view::npos && sep > 0 &&
                     ((origin[0] >= 'a' && origin[0] <= 'z') || (origin[0] >= 'A' && origin[0] <= 'Z'));
    for (size_t i = 0; scheme_ok && i < sep; ++i) scheme_ok = is_scheme_char(origin[i]);
    if (!scheme_ok) return invalid_argument(quoted + " is not '*' nor an origin such as https://chat.example.com");
    if (!is_host_port(origin.substr(sep + 3))) {
        return invalid_argument(quoted + " is not an origin: expected scheme://host[:port] with no path (no trailing '/')");
    }
    return ok_status();
}

bool origin_allowed(const CorsConfig& cors, std::string_view origin) {
    if (origin.empty()) return false;
    for (const std::string& allowed : cors.allowed_origins) {
        if (allowed == "*" || equals_ignore_case(allowed, origin)) return true;
    }
    return false;
}

bool is_preflight(const HttpRequest& request) {
    return request.method == "OPTIONS" && request.headers.contains("Origin") &&
           request.headers.contains("Access-Control-Request-Method");
}

void answer_preflight(const HttpRequest& request, bool origin_allowed, ResponseWriter& writer) {
    if (!origin_allowed) {
        std::string origin(request.header("Origin").value_or(""));
        return send_error(writer, 403, "cross-origin request refused: origin '" + origin + "' is not allowed by this server",
                          "origin_not_allowed");
    }
    writer.send(204, "", "",
                {{"Access-Control-Allow-Methods", std::string(kCorsAllowedMethods)},
                 {"Access-Control-Allow-Headers",
                  allowed_headers(request.header("Access-Control-Request-Headers").value_or(""))},
                 {"Access-Control-Max-Age", std::string(kCorsMaxAgeSeconds)}});
}

void append_cors_headers(const CorsConfig& cors, std::string_view allowed_origin, const HeaderList& extra,
                         HeaderList& out) {
    if (!cors.enabled()) return;
    out.emplace_back("Vary", "Origin");
    if (allowed_origin.empty()) return;
    out.emplace_back("Access-Control-Allow-Origin", std::string(allowed_origin));
    std::string expose;
    for (const auto& [name, value] : extra) {
        if (name.rfind("Access-Control-", 0) == 0) continue;
        expose.append(expose.empty() ? "" : ", ").append(name);
    }
    if (!expose.empty()) out.emplace_back("Access-Control-Expose-Headers", std::move(expose));
}

}  // namespace hichat::api
