// api_http's parse_url, here beside its one user (the webhook sender).
#include <gtest/gtest.h>

#include "api/http/url.h"

namespace hichat::api {
namespace {

TEST(ParseUrl, SplitsSchemeHostPortAndTarget) {
    auto url = parse_url("HTTPS://Hooks.Example.COM:8443/a/b?x=1&y=%20");
    ASSERT_TRUE(url.ok()) << url.status().message();
    EXPECT_EQ(url->scheme, "https");
    EXPECT_EQ(url->host, "hooks.example.com");
    EXPECT_EQ(url->port, 8443);
    EXPECT_EQ(url->target, "/a/b?x=1&y=%20");
    EXPECT_TRUE(url->tls());
    EXPECT_EQ(url->origin(), "https://hooks.example.com:8443");

    auto plain = parse_url("http://127.0.0.1");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->port, 80);
    EXPECT_EQ(plain->target, "/");
    EXPECT_EQ(parse_url("https://h.example")->port, 443);
    EXPECT_EQ(parse_url("http://h.example?q=1")->target, "/?q=1");
}

TEST(ParseUrl, Ipv6LiteralsAreCanonical) {
    auto url = parse_url("http://[0:0:0:0:0:0:0:1]:9000/hook");
    ASSERT_TRUE(url.ok()) << url.status().message();
    EXPECT_EQ(url->host, "::1");
    EXPECT_TRUE(url->host_is_ipv6());
    EXPECT_EQ(url->origin(), "http://[::1]:9000");
    EXPECT_TRUE(is_ip_literal("::1"));
    EXPECT_TRUE(is_ip_literal("10.1.2.3"));
    EXPECT_FALSE(is_ip_literal("example.com"));
}

TEST(ParseUrl, RefusesEachWithItsReason) {
    const std::pair<const char*, const char*> cases[] = {
        {"ftp://example.com/", "scheme 'ftp'"},
        {"file:///etc/passwd", "scheme 'file'"},
        {"gopher://example.com", "scheme"},
        {"example.com/hook", "scheme"},
        {"http:example.com", "'//'"},
        {"http://user:pass@example.com/", "userinfo"},
        {"http://example.com@10.0.0.1/", "userinfo"},
        {"http://example.com/#frag", "fragment"},
        {"http:///hook", "empty host"},
        {"http://:80/", "empty host"},
        {"http://exa_mple.com/", "character"},
        {"http://example.com./", "ends with '.'"},
        {"http://a..b/", "empty label"},
        {"http://2130706433/", "dotted-quad"},
        {"http://0x7f.0.0.1/", "dotted-quad"},
        {"http://127.1/", "dotted-quad"},
        {"http://127.000.0.1/", "dotted-quad"},
        {"http://[::1/", "']'"},
        {"http://[fe80::1%25eth0]/", "zone"},
        {"http://[not:ip]/", "IPv6"},
        {"http://example.com:0/", "port 0"},
        {"http://example.com:65536/", "port 65536"},
        {"http://example.com:8x/", "port '8x'"},
        {"http://example.com:/", "empty port"},
        {"http://exa mple.com/", "spaces"},
        {"http://example.com/\r\nX: y", "control"},
        {"http://ex\xc3\xa4mple.com/", "non-ASCII"},
    };
    for (const auto& [text, reason] : cases) {
        auto url = parse_url(text);
        ASSERT_FALSE(url.ok()) << text;
        EXPECT_NE(url.status().message().find(reason), std::string::npos) << text << ": " << url.status().message();
    }
}

}  // namespace
}  // namespace hichat::api
