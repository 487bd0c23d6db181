// HttpServerConfig::route_body_limits: an upload route takes bodies beyond max_body_bytes while every
// other route keeps the small limit; over a route's own limit: 413 naming that limit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_fixture.h"
#include "test_client.h"

namespace hichat::api::test {
namespace {

class RouteBodyLimitTest : public ::testing::Test {
protected:
    void SetUp() override {
        HttpServerConfig config = short_timeout_config();
        config.max_body_bytes = 1000;
        config.route_body_limits = {{.method = "POST", .path = "/upload", .max_body_bytes = 100000}};
        Router router;
        auto size = [](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
            w->send(200, "text/plain", std::to_string(req.body.size()));
        };
        router.add("POST", "/upload", size);
        router.add("POST", "/echo", size);
        server_ = start_or_fail(config, std::move(router));
        ASSERT_NE(server_, nullptr);
    }

    std::optional<ClientResponse> post(const std::string& target, size_t num_bytes) {
        auto client = RawClient::connect(server_->port());
        EXPECT_NE(client, nullptr);
        if (!client) return std::nullopt;
        client->send_all("POST " + target + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(num_bytes) +
                         "\r\n\r\n" + std::string(num_bytes, 'x'));
        return client->read_response();
    }

    std::unique_ptr<HttpServer> server_;
};

TEST_F(RouteBodyLimitTest, UploadRouteTakesItsOwnLimitOthersKeepTheDefault) {
    auto upload = post("/upload?x=1", 50000);
    ASSERT_TRUE(upload.has_value());
    EXPECT_EQ(upload->status, 200);
    EXPECT_EQ(upload->body, "50000");

    auto other = post("/echo", 2000);
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->status, 413);
    EXPECT_NE(other->body.find("limit of 1000 bytes"), std::string::npos) << other->body;

    auto too_big = post("/upload", 100001);
    ASSERT_TRUE(too_big.has_value());
    EXPECT_EQ(too_big->status, 413);
    EXPECT_NE(too_big->body.find("limit of 100000 bytes"), std::string::npos) << too_big->body;
}

TEST_F(RouteBodyLimitTest, ChunkedBodiesCountAgainstTheRouteLimit) {
    auto send_chunked = [&](const std::string& path, int num_chunks) {
        auto client = RawClient::connect(server_->port());
        EXPECT_NE(client, nullptr);
        std::string wire = "POST " + path + " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (int i = 0; i < num_chunks; ++i) wire += "2710\r\n" + std::string(10000, 'y') + "\r\n";  // 10000 bytes
        client->send_all(wire + "0\r\n\r\n");
        return client->read_response();
    };
    auto within = send_chunked("/upload", 5);
    ASSERT_TRUE(within.has_value());
    EXPECT_EQ(within->status, 200);
    EXPECT_EQ(within->body, "50000");
    auto beyond = send_chunked("/upload", 11);
    ASSERT_TRUE(beyond.has_value());
    EXPECT_EQ(beyond->status, 413);
    auto other = send_chunked("/echo", 1);
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->status, 413);
}

}  // namespace
}  // namespace hichat::api::test
