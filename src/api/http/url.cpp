#include "api/http/url.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <optional>

namespace hichat::api {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

Status refuse(std::string_view text, const std::string& why) {
    // The URL is cut: it comes from configuration or a request and may be long.
    return invalid_argument("URL '" + std::string(text.substr(0, 200)) + "': " + why);
}

// A label that resolvers read as a number ("127", "0x7f"): a host ending in one is IPv4 or nothing.
bool is_numeric_label(std::string_view label) {
    if (label.empty()) return false;
    if (label.size() > 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X')) {
        return std::all_of(label.begin() + 2, label.end(), is_hex);
    }
    return std::all_of(label.begin(), label.end(), is_digit);
}

std::optional<std::string> canonical_ipv4(std::string_view host) {
    in_addr addr{};
    if (inet_pton(AF_INET, std::string(host).c_str(), &addr) != 1) return std::nullopt;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &addr, buf, sizeof buf);
    return std::string(buf);
}

std::optional<std::string> canonical_ipv6(std::string_view host) {
    in6_addr addr{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &addr) != 1) return std::nullopt;
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &addr, buf, sizeof buf);
    return std::string(buf);
}

// A DNS name or IPv4 literal (no brackets); returns the lower-case host or why it is refused.
Result<std::string> parse_name_host(std::string_view text, std::string_view host) {
    if (host.empty()) return refuse(text, "empty host");
    for (char c : host) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') {
            return refuse(text, "host '" + std::string(host) + "' has a character other than letters, digits, '-' and '.'");
        }
    }
    if (host.back() == '.') return refuse(text, "host '" + std::string(host) + "' ends with '.'");
    if (host.front() == '.' || host.find("..") != std::string_view::npos) {
        return refuse(text, "host '" + std::string(host) + "' has an empty label");
    }
    const std::string_view last_label = host.substr(host.rfind('.') + 1);
    if (!is_numeric_label(last_label)) return lower(host);
    auto ipv4 = canonical_ipv4(host);
    if (!ipv4 || *ipv4 != host) {
        return refuse(text, "host '" + std::string(host) + "' is numeric but not a dotted-quad IPv4 address");
    }
    return *ipv4;
}

Result<uint16_t> parse_port(std::string_view text, std::string_view port_text) {
    if (port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(), is_digit)) {
        return refuse(text, "port '" + std::string(port_text) + "' is not a number in [1, 65535]");
    }
    const int port = std::stoi(std::string(port_text));
    if (port < 1 || port > 65535) return refuse(text, "port " + std::to_string(port) + " is not in [1, 65535]");
    return static_cast<uint16_t>(port);
}

}  // namespace

std::string Url::origin() const {
    const std::string h = host_is_ipv6() ? "[" + host + "]" : host;
    return scheme + "://" + h + ":" + std::to_string(port);
}

bool is_ip_literal(std::string_view host) { return canonical_ipv4(host) || canonical_ipv6(host); }

Result<Url> parse_url(std::string_view text) {
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f) return refuse(text, "spaces, control and non-ASCII bytes are not allowed");
    }
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) return refuse(text, "no scheme (http:// or https://)");
    Url url;
    url.scheme = lower(text.substr(0, colon));
    if (url.scheme != "http" && url.scheme != "https") {
        return refuse(text, "scheme '" + url.scheme + "' is not http or https");
    }
    std::string_view rest = text.substr(colon + 1);
    if (rest.substr(0, 2) != "//") return refuse(text, "no '//' after the scheme");
    rest.remove_prefix(2);
    if (rest.find('#') != std::string_view::npos) return refuse(text, "a fragment ('#') is not allowed");
    const size_t authority_end = std::min(rest.find('/'), rest.find('?'));
    std::string_view authority = rest.substr(0, authority_end);
    const std::string_view target = authority_end == std::string_view::npos ? "" : rest.substr(authority_end);
    if (authority.find('@') != std::string_view::npos) return refuse(text, "userinfo ('user@') is not allowed");

    std::string_view port_text;
    if (!authority.empty() && authority.front() == '[') {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) return refuse(text, "'[' without ']' in the host");
        const std::string_view literal = authority.substr(1, close - 1);
        if (literal.find('%') != std::string_view::npos) return refuse(text, "IPv6 zone identifiers are not allowed");
        auto ipv6 = canonical_ipv6(literal);
        if (!ipv6) return refuse(text, "'" + std::string(literal) + "' is not an IPv6 address");
        url.host = *ipv6;
        const std::string_view after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':') return refuse(text, "unexpected text after ']'");
        if (!after.empty()) port_text = after.substr(1);
        if (after == ":") return refuse(text, "empty port");
    } else {
        const size_t port_colon = authority.find(':');
        auto host = parse_name_host(text, authority.substr(0, port_colon));
        if (!host.ok()) return host.status();
        url.host = std::move(host).value();
        if (port_colon != std::string_view::npos) {
            port_text = authority.substr(port_colon + 1);
            if (port_text.empty()) return refuse(text, "empty port");
        }
    }
    if (port_text.empty()) {
        url.port = url.tls() ? 443 : 80;
    } else {
        auto port = parse_port(text, port_text);
        if (!port.ok()) return port.status();
        url.port = *port;
    }
    url.target = target.empty() ? "/" : (target.front() == '?' ? "/" + std::string(target) : std::string(target));
    return url;
}

}  // namespace hichat::api
