// HttpTarget: where the load generator sends its requests, from `--url` and `--endpoint`.
#pragma once

#include <string>

#include "base/status.h"

namespace hichat::tools::bench {

struct HttpTarget {
    std::string host;         // name or IPv4 literal; an IPv6 literal without its brackets
    std::string port;         // decimal; "80" when the URL gives none
    std::string path;         // request target, e.g. "/v1/completions"
    std::string host_header;  // the Host header value: host[:port] as written in the URL
};

// "http://host[:port][/prefix]" + "/v1/completions" -> target. The URL's path prefix, if any, goes
// before the endpoint. Errors: https (not supported; use a TLS-terminating proxy or plain HTTP),
// another scheme, an empty host, a bad port, an endpoint not starting with '/'.
Result<HttpTarget> parse_http_target(const std::string& url, const std::string& endpoint);

}  // namespace hichat::tools::bench
