// HTTP response heads and --url parsing: framing, keep-alive, and named errors.
#include "bench/response_head.h"

#include <gtest/gtest.h>

#include "bench/http_target.h"

namespace hichat::tools::bench {
namespace {

TEST(ResponseHead, ChunkedKeepAlive) {
    auto h = parse_response_head(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\ntransfer-encoding: Chunked\r\n"
        "Connection: keep-alive\r\nContent-Length: 5\r\n\r\n");
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(h->status, 200);
    EXPECT_TRUE(h->chunked);
    EXPECT_FALSE(h->content_length.has_value());  // chunked wins
    EXPECT_TRUE(h->keep_alive);
    EXPECT_FALSE(h->body_ends_at_close());
}

TEST(ResponseHead, LengthAndClose) {
    auto h =
        parse_response_head("HTTP/1.1 401 Unauthorized\r\nContent-Length:  42 \r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->status, 401);
    EXPECT_EQ(h->content_length, 42u);
    EXPECT_FALSE(h->keep_alive);
    auto old = parse_response_head("HTTP/1.0 200 OK\r\n\r\n");
    ASSERT_TRUE(old.ok());
    EXPECT_FALSE(old->keep_alive);
    EXPECT_TRUE(old->body_ends_at_close());
}

TEST(ResponseHead, RejectsGarbage) {
    for (const char* head :
         {"", "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n",
          "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"}) {
        auto h = parse_response_head(head);
        ASSERT_FALSE(h.ok()) << head;
        EXPECT_NE(h.status().message().find("HTTP response"), std::string::npos);
    }
}

TEST(HttpTarget, ParsesUrls) {
    auto t = parse_http_target("http://127.0.0.1:8000", "/v1/completions");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->host, "127.0.0.1");
    EXPECT_EQ(t->port, "8000");
    EXPECT_EQ(t->path, "/v1/completions");
    EXPECT_EQ(t->host_header, "127.0.0.1:8000");
    auto prefixed = parse_http_target("http://example.com/api/", "/v1/completions");
    ASSERT_TRUE(prefixed.ok());
    EXPECT_EQ(prefixed->port, "80");
    EXPECT_EQ(prefixed->path, "/api/v1/completions");
    auto v6 = parse_http_target("http://[::1]:9000", "/x");
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(v6->port, "9000");
}

TEST(HttpTarget, NamesTheProblem) {
    EXPECT_NE(parse_http_target("https://a:1", "/v1").status().message().find("https is not supported"),
              std::string::npos);
    EXPECT_NE(parse_http_target("ftp://a", "/v1").status().message().find("http://"), std::string::npos);
    EXPECT_NE(parse_http_target("http://a:99999", "/v1").status().message().find("bad port"),
              std::string::npos);
    EXPECT_NE(parse_http_target("http://:80", "/v1").status().message().find("no host"), std::string::npos);
    EXPECT_NE(parse_http_target("http://a", "v1").status().message().find("--endpoint"), std::string::npos);
}

}  // namespace
}  // namespace hichat::tools::bench
