#include "bench/http_target.h"

#include <cctype>

namespace hichat::tools::bench {
namespace {

bool is_port(const std::string& s) {
    if (s.empty() || s.size() > 5) return false;
    for (char c : s) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    const int v = std::stoi(s);
    return v > 0 && v <= 65535;
}

}  // namespace

Result<HttpTarget> parse_http_target(const std::string& url, const std::string& endpoint) {
    const std::string kScheme = "http://";
    if (url.rfind("https://", 0) == 0) {
        return invalid_argument("--url " + url + ": https is not supported by the load generator; use http");
    }
    if (url.rfind(kScheme, 0) != 0) return invalid_argument("--url " + url + ": must start with http://");
    if (endpoint.empty() || endpoint[0] != '/') {
        return invalid_argument("--endpoint " + endpoint + ": must start with '/'");
    }
    std::string rest = url.substr(kScheme.size());
    const size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();

    HttpTarget t;
    t.host_header = authority;
    t.port = "80";
    if (!authority.empty() && authority[0] == '[') {  // [v6]:port
        const size_t close = authority.find(']');
        if (close == std::string::npos)
            return invalid_argument("--url " + url + ": unclosed '[' in the host");
        t.host = authority.substr(1, close - 1);
        const std::string after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':' || !is_port(after.substr(1)))
                return invalid_argument("--url " + url + ": bad port");
            t.port = after.substr(1);
        }
    } else if (const size_t colon = authority.rfind(':'); colon != std::string::npos) {
        t.host = authority.substr(0, colon);
        t.port = authority.substr(colon + 1);
        if (!is_port(t.port)) return invalid_argument("--url " + url + ": bad port '" + t.port + "'");
    } else {
        t.host = authority;
    }
    if (t.host.empty()) return invalid_argument("--url " + url + ": no host");
    t.path = prefix + endpoint;
    return t;
}

}  // namespace hichat::tools::bench
