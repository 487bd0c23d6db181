// CORS over real sockets: preflights (allowed, refused, CORS off), the headers of ordinary
// responses (errors and SSE streams included), and the origin checks of the config.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/http/cors.h"
#include "server_fixture.h"
#include "test_client.h"

namespace hichat::api::test {
namespace {

constexpr const char* kGood = "https://chat.example.com";

Router cors_router() {
    Router router;
    router.add("GET", "/hello", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "text/plain", "hello", {{"X-Request-Id", "r-1"}});
    });
    router.add("POST", "/stream", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->start_stream(200);
        w->write("data: 1\n\n");
        w->finish();
    });
    return router;
}

std::string preflight(const std::string& origin, const std::string& path = "/stream") {
    return "OPTIONS " + path + " HTTP/1.1\r\nHost: t\r\nOrigin: " + origin +
           "\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: x-stainless-os, "
           "content-type, authorization\r\n\r\n";
}

class CorsTest : public ::testing::Test {
protected:
    void start(std::vector<std::string> origins) {
        HttpServerConfig config = short_timeout_config();
        config.cors.allowed_origins = std::move(origins);
        server_ = start_or_fail(config, cors_router());
        ASSERT_NE(server_, nullptr);
    }
    std::optional<ClientResponse> exchange(const std::string& wire) {
        auto client = RawClient::connect(server_->port());
        EXPECT_NE(client, nullptr);
        if (!client || !client->send_all(wire)) return std::nullopt;
        return client->read_response();
    }
    std::unique_ptr<HttpServer> server_;
};

TEST_F(CorsTest, PreflightFromAnAllowedOriginGets204WithTheAllowances) {
    start({"https://other.example", kGood});
    for (const char* path : {"/stream", "/no/such/route"}) {  // answered before routing
        auto r = exchange(preflight(kGood, path));
        ASSERT_TRUE(r.has_value());
        EXPECT_EQ(r->status, 204);
        EXPECT_EQ(r->headers.get("Access-Control-Allow-Origin"), kGood);
        EXPECT_EQ(r->headers.get("Vary"), "Origin");
        EXPECT_EQ(r->headers.get("Access-Control-Allow-Methods"), "GET, HEAD, POST, OPTIONS");
        EXPECT_EQ(r->headers.get("Access-Control-Allow-Headers"), "Authorization, Content-Type, x-stainless-os");
        EXPECT_EQ(r->headers.get("Access-Control-Max-Age"), "600");
        EXPECT_FALSE(r->headers.contains("Content-Length"));  // RFC 9110: none on a 204
        EXPECT_TRUE(r->body.empty());
    }
}

TEST_F(CorsTest, PreflightFromAnotherOriginGets403NamingIt) {
    start({kGood});
    auto r = exchange(preflight("https://evil.example"));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 403);
    EXPECT_FALSE(r->headers.contains("Access-Control-Allow-Origin"));
    EXPECT_EQ(r->headers.get("Vary"), "Origin");
    auto error = nlohmann::json::parse(r->body)["error"];
    EXPECT_EQ(error["code"], "origin_not_allowed");
    EXPECT_NE(error["message"].get<std::string>().find("https://evil.example"), std::string::npos);
}

TEST_F(CorsTest, WithoutCorsPreflightsAre403AndResponsesCarryNoCorsHeaders) {
    start({});
    auto pre = exchange(preflight(kGood));
    ASSERT_TRUE(pre.has_value());
    EXPECT_EQ(pre->status, 403);
    auto get = exchange(get_request("/hello", std::string("Origin: ") + kGood + "\r\n"));
    ASSERT_TRUE(get.has_value());
    EXPECT_EQ(get->status, 200);
    for (const auto& [name, value] : get->headers.fields()) {
        EXPECT_NE(name.rfind("Access-Control-", 0), 0u) << name;
        EXPECT_NE(name, "Vary");
    }
}

TEST_F(CorsTest, ResponsesToAnAllowedOriginCarryAllowOriginErrorsAndStreamsToo) {
    start({kGood});
    const std::string origin = std::string("Origin: ") + kGood + "\r\n";
    auto ok = exchange(get_request("/hello", origin));
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->headers.get("Access-Control-Allow-Origin"), kGood);
    EXPECT_EQ(ok->headers.get("Access-Control-Expose-Headers"), "X-Request-Id");
    EXPECT_EQ(ok->headers.get("Vary"), "Origin");

    auto not_found = exchange(get_request("/nope", origin));
    ASSERT_TRUE(not_found.has_value());
    EXPECT_EQ(not_found->status, 404);
    EXPECT_EQ(not_found->headers.get("Access-Control-Allow-Origin"), kGood);

    auto stream = exchange("POST /stream HTTP/1.1\r\nHost: t\r\n" + origin + "Content-Length: 0\r\n\r\n");
    ASSERT_TRUE(stream.has_value());
    EXPECT_TRUE(stream->chunked);
    EXPECT_EQ(stream->body, "data: 1\n\n");
    EXPECT_EQ(stream->headers.get("Access-Control-Allow-Origin"), kGood);

    // Refused by the HTTP layer once the headers were read: the browser can still read the error.
    auto too_large = exchange("POST /stream HTTP/1.1\r\nHost: t\r\n" + origin +
                              "Transfer-Encoding: chunked\r\n\r\n" + "900000\r\n" + std::string(0x900000, 'x'));
    ASSERT_TRUE(too_large.has_value());
    EXPECT_EQ(too_large->status, 413);
    EXPECT_EQ(too_large->headers.get("Access-Control-Allow-Origin"), kGood);

    auto other = exchange(get_request("/hello", "Origin: https://evil.example\r\n"));
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->status, 200);  // the browser, not the server, withholds it from the page
    EXPECT_FALSE(other->headers.contains("Access-Control-Allow-Origin"));
}

TEST_F(CorsTest, StarAllowsEveryOriginAndEchoesIt) {
    start({"*"});
    auto r = exchange(preflight("http://localhost:5173"));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 204);
    EXPECT_EQ(r->headers.get("Access-Control-Allow-Origin"), "http://localhost:5173");
}

TEST_F(CorsTest, PlainOptionsGets204WithAllow) {
    start({});
    auto r = exchange("OPTIONS /hello HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 204);
    EXPECT_EQ(r->headers.get("Allow"), "GET, OPTIONS");
    auto unknown = exchange("OPTIONS /nope HTTP/1.1\r\nHost: t\r\n\r\n");
    ASSERT_TRUE(unknown.has_value());
    EXPECT_EQ(unknown->status, 404);
}

TEST(CorsConfigTest, OriginsAreCheckedAndErrorsNameTheValue) {
    for (const char* good : {"*", "https://chat.example.com", "http://localhost:5173", "http://[::1]:8080",
                             "app://x"}) {
        EXPECT_TRUE(check_allowed_origin(good).ok()) << good;
    }
    for (const char* bad : {"", "chat.example.com", "https://chat.example.com/", "https://x/path", "https://",
                            "https://x:port", "://x", "1http://x", "https://a b", "https://x:123456"}) {
        Status s = check_allowed_origin(bad);
        EXPECT_FALSE(s.ok()) << bad;
        EXPECT_NE(s.message().find(std::string("'") + bad + "'"), std::string::npos) << s.message();
    }
    HttpServerConfig config;
    config.cors.allowed_origins = {"https://ok.example", "https://bad.example/"};
    Status s = config.validate();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("HttpServerConfig.cors.allowed_origins"), std::string::npos) << s.message();
}

TEST(CorsConfigTest, OriginMatchIsExactButIgnoresAsciiCase) {
    CorsConfig cors{{"https://chat.example.com"}};
    EXPECT_TRUE(origin_allowed(cors, "https://chat.example.com"));
    EXPECT_TRUE(origin_allowed(cors, "HTTPS://Chat.Example.com"));
    EXPECT_FALSE(origin_allowed(cors, "https://chat.example.com:8443"));
    EXPECT_FALSE(origin_allowed(cors, "https://chat.example.com.evil.example"));
    EXPECT_FALSE(origin_allowed(cors, ""));
    EXPECT_FALSE(origin_allowed(CorsConfig{}, "https://chat.example.com"));
}

}  // namespace
}  // namespace hichat::api::test
