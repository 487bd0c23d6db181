// Url: an absolute http:// or https:// URL split for an outbound request (the webhook client).
// Plain data. parse_url() is strict: it accepts only what a webhook target needs and refuses the
// rest by name, so that what the allow-list checks is exactly the host that will be connected to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hichat::api {

struct Url {
    std::string scheme;  // "http" or "https" (lower case)
    std::string host;    // lower case; a DNS name, a dotted-quad IPv4 address, or an IPv6 address
                         // without brackets
    uint16_t port = 0;   // the explicit port, else 80 / 443
    std::string target;  // path and query as given, "/" when empty; never a fragment

    bool tls() const { return scheme == "https"; }
    bool host_is_ipv6() const { return host.find(':') != std::string::npos; }
    // "https://host:port" with IPv6 hosts in brackets: for messages (no path or query, which may
    // carry a token).
    std::string origin() const;
};

// Refused, each with a message naming the problem: a scheme other than http / https; no "//"
// authority; userinfo ("user:pass@"); an empty host, a host with characters outside letters, digits,
// '-' and '.', an empty label, a trailing dot, a numeric host that is not a dotted quad (such as
// "2130706433" or "0x7f.1", which resolvers would read as IPv4), a malformed IPv6 literal or zone;
// a port outside [1, 65535]; a fragment; spaces, control or non-ASCII bytes anywhere.
Result<Url> parse_url(std::string_view text);

// Whether `host` (as in Url::host) is an IPv4 or IPv6 literal.
bool is_ip_literal(std::string_view host);

}  // namespace hichat::api
