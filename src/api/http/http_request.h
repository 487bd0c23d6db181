// HttpRequest: one parsed HTTP request as handlers see it. Plain data, owned by the caller;
// the server builds it on an I/O thread and hands it to the handler by const reference.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hichat::api {

// Header fields in arrival order. Lookup is case-insensitive (RFC 9110 field names).
using HeaderList = std::vector<std::pair<std::string, std::string>>;

class HttpHeaders {
public:
    HttpHeaders() = default;
    explicit HttpHeaders(HeaderList fields) : fields_(std::move(fields)) {}

    void add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }
    // Value of the first field named `name`, or nullopt. The view lives as long as this object.
    std::optional<std::string_view> get(std::string_view name) const;
    bool contains(std::string_view name) const { return get(name).has_value(); }
    const HeaderList& fields() const { return fields_; }

private:
    HeaderList fields_;
};

bool equals_ignore_case(std::string_view a, std::string_view b);

struct HttpRequest {
    std::string method;     // as sent, e.g. "GET", "POST"
    std::string target;     // request target as sent, e.g. "/v1/models?x=1"
    std::string path;       // target up to '?', not percent-decoded
    std::string query;      // target after '?', empty if none
    HttpHeaders headers;
    std::string body;       // whole body (at most HttpServerConfig::max_body_bytes)
    std::string remote;     // peer address "ip:port"
    int version = 11;       // 10: HTTP/1.0, 11: HTTP/1.1

    std::optional<std::string_view> header(std::string_view name) const { return headers.get(name); }
};

// Splits a request target into path and query at the first '?'.
std::pair<std::string, std::string> split_target(std::string_view target);

// Method and target of the request line at the start of `bytes` ("GET /x HTTP/1.1\r\n..."), for
// reporting a request refused before its headers were parsed; empty strings for what is missing.
std::pair<std::string, std::string> peek_request_line(std::string_view bytes);

// Decodes %XX escapes (RFC 3986); nullopt for a malformed escape.
std::optional<std::string> percent_decode(std::string_view s);

}  // namespace hichat::api
