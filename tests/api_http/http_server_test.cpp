// The server over real sockets: routing, keep-alive, limits, timeouts, many idle connections.
// Responses are parsed by Beast's parser (test_client) or produced by curl.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server_fixture.h"
#include "test_client.h"

namespace hichat::api::test {
namespace {

using Clock = std::chrono::steady_clock;

long long ms_since(Clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

Router basic_router() {
    Router router;
    router.add("GET", "/hello", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "text/plain", "hello");
    });
    router.add("POST", "/echo", [](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
        nlohmann::json out = {{"method", req.method},
                              {"body", req.body},
                              {"query", req.query},
                              {"remote", req.remote},
                              {"x_test", std::string(req.header("X-TEST").value_or("missing"))}};
        w->send(200, "application/json", out.dump(), {{"X-Handler", "echo"}});
    });
    router.add("GET", "/remote", [](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "text/plain", req.remote);
    });
    router.add("GET", "/throws", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {
        throw std::runtime_error("handler failed");
    });
    router.add("GET", "/forgets", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {});
    return router;
}

nlohmann::json error_of(const ClientResponse& response) {
    auto json = nlohmann::json::parse(response.body);
    EXPECT_TRUE(json["error"]["param"].is_null());
    EXPECT_TRUE(json["error"]["message"].is_string());
    return json["error"];
}

class HttpServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        server_ = start_or_fail(config(), basic_router());
        ASSERT_NE(server_, nullptr);
    }
    virtual HttpServerConfig config() { return short_timeout_config(); }
    std::unique_ptr<RawClient> connect() {
        auto client = RawClient::connect(server_->port());
        EXPECT_NE(client, nullptr);
        return client;
    }

    std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, GetAndPostRouting) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/hello")));
    auto hello = client->read_response();
    ASSERT_TRUE(hello.has_value());
    EXPECT_EQ(hello->status, 200);
    EXPECT_EQ(hello->body, "hello");
    EXPECT_EQ(hello->headers.get("Content-Type"), "text/plain");

    std::string body = R"({"prompt":"hi"})";
    ASSERT_TRUE(client->send_all("POST /echo?stream=true HTTP/1.1\r\nHost: t\r\nx-test: yes\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body));
    auto echo = client->read_response();
    ASSERT_TRUE(echo.has_value());
    EXPECT_EQ(echo->status, 200);
    EXPECT_EQ(echo->headers.get("x-handler"), "echo");
    auto json = nlohmann::json::parse(echo->body);
    EXPECT_EQ(json["method"], "POST");
    EXPECT_EQ(json["body"], body);
    EXPECT_EQ(json["query"], "stream=true");
    EXPECT_EQ(json["x_test"], "yes");
    EXPECT_EQ(json["remote"].get<std::string>().rfind("127.0.0.1:", 0), 0u);
}

TEST_F(HttpServerTest, NotFoundAndMethodNotAllowedAreJsonErrors) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/nope")));
    auto not_found = client->read_response();
    ASSERT_TRUE(not_found.has_value());
    EXPECT_EQ(not_found->status, 404);
    EXPECT_EQ(not_found->headers.get("Content-Type"), "application/json");
    EXPECT_EQ(error_of(*not_found)["type"], "invalid_request_error");

    ASSERT_TRUE(client->send_all("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto not_allowed = client->read_response();
    ASSERT_TRUE(not_allowed.has_value());
    EXPECT_EQ(not_allowed->status, 405);
    EXPECT_EQ(not_allowed->headers.get("Allow"), "GET, OPTIONS");
    EXPECT_EQ(error_of(*not_allowed)["code"], "method_not_allowed");
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/remote")));
    auto first = client->read_response();
    ASSERT_TRUE(client->send_all(get_request("/remote")));
    auto second = client->read_response();
    ASSERT_TRUE(first.has_value() && second.has_value());
    EXPECT_TRUE(first->keep_alive);
    EXPECT_EQ(first->body, second->body);  // same client port: same TCP connection
    EXPECT_EQ(server_->num_connections(), 1u);
}

TEST_F(HttpServerTest, PipelinedRequestsAnsweredInOrder) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/hello") + get_request("/nope") + get_request("/hello")));
    auto a = client->read_response();
    auto b = client->read_response();
    auto c = client->read_response();
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(a->status, 200);
    EXPECT_EQ(b->status, 404);
    EXPECT_EQ(c->status, 200);
}

TEST_F(HttpServerTest, ConnectionCloseAndHttp10AreHonoured) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/hello", "Connection: close\r\n")));
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_FALSE(response->keep_alive);
    EXPECT_TRUE(client->wait_closed(2000));

    auto old_client = connect();
    ASSERT_TRUE(old_client->send_all("GET /hello HTTP/1.0\r\n\r\n"));
    auto old_response = old_client->read_response();
    ASSERT_TRUE(old_response.has_value());
    EXPECT_EQ(old_response->body, "hello");
    EXPECT_TRUE(old_client->wait_closed(2000));
}

TEST_F(HttpServerTest, HeadGetsHeadersWithoutBody) {
    auto client = connect();
    ASSERT_TRUE(client->send_all("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
    auto head = client->read_response(5000, /*head_request=*/true);
    ASSERT_TRUE(head.has_value());
    EXPECT_EQ(head->status, 200);
    EXPECT_EQ(head->headers.get("Content-Length"), "5");
    // Nothing else arrives: the next response starts right after the head.
    ASSERT_TRUE(client->send_all(get_request("/hello")));
    auto next = client->read_response();
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(next->body, "hello");
}

TEST_F(HttpServerTest, HandlerExceptionAndForgottenResponseGive500) {
    auto client = connect();
    for (const char* path : {"/throws", "/forgets"}) {
        ASSERT_TRUE(client->send_all(get_request(path)));
        auto response = client->read_response();
        ASSERT_TRUE(response.has_value()) << path;
        EXPECT_EQ(response->status, 500) << path;
        EXPECT_EQ(error_of(*response)["type"], "server_error");
    }
}

TEST_F(HttpServerTest, MalformedRequestGets400) {
    auto client = connect();
    ASSERT_TRUE(client->send_all("GET /hello HTTP/9.Z\r\n\r\n"));
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 400);
    EXPECT_EQ(error_of(*response)["type"], "invalid_request_error");
    EXPECT_TRUE(client->wait_closed(3000));
}

TEST_F(HttpServerTest, NineMegabyteBodyGets413) {
    std::string body(9 * 1024 * 1024, 'x');
    auto client = connect();
    ASSERT_TRUE(client->send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
                                 "\r\n\r\n" + body, 10000));
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 413);
    EXPECT_EQ(error_of(*response)["code"], "request_too_large");

    // Same with a chunked body (no length up front): cut off once the limit is passed.
    auto chunked = connect();
    std::string wire = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string piece(1024 * 1024, 'y');
    bool sent = chunked->send_all(wire);
    for (int i = 0; i < 9 && sent; ++i) sent = chunked->send_all("100000\r\n" + piece + "\r\n", 10000);
    if (sent) chunked->send_all("0\r\n\r\n");
    auto chunked_response = chunked->read_response();
    ASSERT_TRUE(chunked_response.has_value());
    EXPECT_EQ(chunked_response->status, 413);
}

TEST_F(HttpServerTest, OversizeHeadersGet431) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/hello", "X-Big: " + std::string(20 * 1024, 'h') + "\r\n")));
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 431);
    EXPECT_EQ(error_of(*response)["code"], "request_header_fields_too_large");
}

TEST_F(HttpServerTest, ExpectContinueGetsInterimResponse) {
    auto client = connect();
    ASSERT_TRUE(client->send_all("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
    auto interim = client->read_response();
    ASSERT_TRUE(interim.has_value());
    EXPECT_EQ(interim->status, 100);
    ASSERT_TRUE(client->send_all("ping"));
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(nlohmann::json::parse(response->body)["body"], "ping");
}

TEST_F(HttpServerTest, CurlGetAndPost) {
    std::string url = "http://127.0.0.1:" + std::to_string(server_->port());
    auto get = run_command("curl -sS --max-time 10 " + url + "/hello");
    EXPECT_EQ(get.exit_code, 0);
    EXPECT_EQ(get.output, "hello");
    auto post = run_command("curl -sS --max-time 10 -H 'X-Test: curl' --data-binary 'abc' " + url + "/echo");
    EXPECT_EQ(post.exit_code, 0);
    auto json = nlohmann::json::parse(post.output);
    EXPECT_EQ(json["body"], "abc");
    EXPECT_EQ(json["x_test"], "curl");
}

class HttpServerTimeoutTest : public HttpServerTest {
protected:
    HttpServerConfig config() override {
        HttpServerConfig config = short_timeout_config();
        config.header_timeout_ms = 400;
        config.body_timeout_ms = 400;
        config.idle_keepalive_timeout_ms = 400;
        return config;
    }
};

TEST_F(HttpServerTimeoutTest, StalledClientsAreCutOffWhileOthersAreServed) {
    auto start = Clock::now();
    auto silent = connect();                                          // sends nothing
    auto stalled_body = connect();                                    // headers, then stalls
    ASSERT_TRUE(stalled_body->send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789"));
    auto stalled_header = connect();                                  // half a header
    ASSERT_TRUE(stalled_header->send_all("GET /hello HTTP/1.1\r\nHost"));

    // Another client is served at once while those three stall.
    auto good = connect();
    ASSERT_TRUE(good->send_all(get_request("/hello")));
    auto ok = good->read_response();
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->status, 200);
    EXPECT_LT(ms_since(start), 300);

    auto timeout = stalled_body->read_response(3000);
    ASSERT_TRUE(timeout.has_value());
    EXPECT_EQ(timeout->status, 408);
    EXPECT_EQ(error_of(*timeout)["code"], "request_timeout");
    EXPECT_GE(ms_since(start), 350);

    auto header_timeout = stalled_header->read_response(3000);
    ASSERT_TRUE(header_timeout.has_value());
    EXPECT_EQ(header_timeout->status, 408);

    EXPECT_TRUE(silent->wait_closed(3000));
    EXPECT_TRUE(silent->received().empty());  // nothing to answer: just closed
    EXPECT_LT(ms_since(start), 2500);
}

TEST_F(HttpServerTimeoutTest, IdleKeepAliveConnectionIsClosed) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/hello")));
    ASSERT_TRUE(client->read_response().has_value());
    auto start = Clock::now();
    EXPECT_TRUE(client->wait_closed(3000));
    EXPECT_GE(ms_since(start), 300);
}

TEST(HttpServerManyConnectionsTest, ThreeHundredIdleKeepAliveConnectionsOnTwoThreads) {
    HttpServerConfig config = short_timeout_config();
    config.num_io_threads = 2;
    auto server = start_or_fail(config, basic_router());
    ASSERT_NE(server, nullptr);
    int num_threads_before = count_process_threads();

    constexpr int kNumClients = 300;
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < kNumClients; ++i) {
        clients.push_back(RawClient::connect(server->port()));
        ASSERT_NE(clients.back(), nullptr) << i;
        ASSERT_TRUE(clients.back()->send_all(get_request("/remote")));
    }
    std::vector<std::string> remotes;
    for (auto& client : clients) {
        auto response = client->read_response();
        ASSERT_TRUE(response.has_value());
        remotes.push_back(response->body);
    }
    // All 300 are now idle and open at once; a second round reuses every connection.
    EXPECT_EQ(server->num_connections(), static_cast<size_t>(kNumClients));
    EXPECT_EQ(count_process_threads(), num_threads_before);
    for (int i = 0; i < kNumClients; ++i) ASSERT_TRUE(clients[i]->send_all(get_request("/remote")));
    for (int i = 0; i < kNumClients; ++i) {
        auto response = clients[i]->read_response();
        ASSERT_TRUE(response.has_value());
        EXPECT_EQ(response->body, remotes[i]);
    }
}

TEST(HttpServerStartTest, PortInUseIsAnErrorNamingTheAddress) {
    auto first = start_or_fail(short_timeout_config(), basic_router());
    ASSERT_NE(first, nullptr);
    HttpServerConfig config = short_timeout_config();
    config.port = first->port();
    auto second = HttpServer::start(config, basic_router());
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("127.0.0.1:" + std::to_string(first->port())), std::string::npos)
        << second.status().message();
}

}  // namespace
}  // namespace hichat::api::test
