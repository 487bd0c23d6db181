// HttpServerConfig::on_exchange over real sockets: exactly one report per request, whatever answered
// it (handler, router, or the HTTP layer's 400 / 408 / 413 / 431), and none for a connection that
// never sent a byte. The observer runs before a response's last bytes are written (and before a
// connection is closed), so each check below runs after the client saw the answer or the close,
// with no waiting.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server_fixture.h"
#include "test_client.h"

namespace hichat::api::test {
namespace {

class Collector {
public:
    void add(const ExchangeRecord& record) {
        std::lock_guard<std::mutex> lock(mu_);
        records_.push_back(record);
    }
    std::vector<ExchangeRecord> records() {
        std::lock_guard<std::mutex> lock(mu_);
        return records_;
    }

private:
    std::mutex mu_;
    std::vector<ExchangeRecord> records_;
};

struct Parked {  // a writer a handler keeps, answered later by the test
    std::promise<std::shared_ptr<ResponseWriter>> writer;
    std::promise<void> client_gone;
};

Router observed_router(Parked* parked) {
    Router router;
    router.add("GET", "/hello", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->annotate(std::string("hello-note"));
        w->send(200, "text/plain", "hello");
    });
    router.add("POST", "/echo", [](const HttpRequest& req, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "text/plain", req.body);
    });
    router.add("GET", "/items/*", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->start_stream(200);
        w->write("data: 1\n\n");
        w->write("data: 2\n\n");
        w->finish();
    });
    router.add("GET", "/park", [parked](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->start_stream(200);
        w->on_client_gone([parked] { parked->client_gone.set_value(); });
        parked->writer.set_value(w);
    });
    return router;
}

class ExchangeObserverTest : public ::testing::Test {
protected:
    void SetUp() override {
        HttpServerConfig config = short_timeout_config();
        config.header_timeout_ms = 300;  // the 408 test waits for it; nothing asserts how long it takes
        config.on_exchange = [this](const ExchangeRecord& r) { collector_.add(r); };
        server_ = start_or_fail(config, observed_router(&parked_));
        ASSERT_NE(server_, nullptr);
    }
    std::unique_ptr<RawClient> connect() {
        auto client = RawClient::connect(server_->port());
        EXPECT_NE(client, nullptr);
        return client;
    }
    // Sends `wire`, reads one response and checks there is exactly one report, with `status`.
    ExchangeRecord one_exchange(const std::string& wire, int status) {
        auto client = connect();
        EXPECT_TRUE(client->send_all(wire));
        auto response = client->read_response();
        EXPECT_TRUE(response.has_value());
        if (response) EXPECT_EQ(response->status, status);
        auto records = collector_.records();
        EXPECT_EQ(records.size(), 1u);
        if (records.empty()) return {};
        EXPECT_EQ(records[0].status, status);
        EXPECT_EQ(records[0].remote.rfind("127.0.0.1:", 0), 0u) << records[0].remote;
        EXPECT_GT(records[0].num_bytes_sent, 0u);
        EXPECT_GE(records[0].duration_ms, 0.0);
        return records[0];
    }

    Collector collector_;
    Parked parked_;
    std::unique_ptr<HttpServer> server_;
};

TEST_F(ExchangeObserverTest, GetIsReportedWithRouteBytesAndAnnotation) {
    auto client = connect();
    ASSERT_TRUE(client->send_all("GET /hello?x=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
    ASSERT_TRUE(client->wait_closed(5000));
    const std::string wire = client->received();
    ASSERT_TRUE(parse_response(wire).has_value());
    auto records = collector_.records();
    ASSERT_EQ(records.size(), 1u);
    const ExchangeRecord& r = records[0];
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.target, "/hello?x=1");
    EXPECT_EQ(r.route, "/hello");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.num_bytes_sent, wire.size());  // every byte the client got, head included
    const auto* note = std::any_cast<std::string>(&r.annotation);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(*note, "hello-note");
}

TEST_F(ExchangeObserverTest, RouterRefusalsAreReported) {
    ExchangeRecord not_found = one_exchange(get_request("/nope"), 404);
    EXPECT_EQ(not_found.target, "/nope");
    EXPECT_EQ(not_found.route, "");
    ExchangeRecord not_allowed = ExchangeRecord{};
    {
        auto client = connect();
        ASSERT_TRUE(client->send_all("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(client->read_response().has_value());
        auto records = collector_.records();
        ASSERT_EQ(records.size(), 2u);
        not_allowed = records[1];
    }
    EXPECT_EQ(not_allowed.status, 405);
    EXPECT_EQ(not_allowed.method, "DELETE");
    EXPECT_EQ(not_allowed.route, "/hello");
}

TEST_F(ExchangeObserverTest, MalformedRequestIsReportedAs400) {
    ExchangeRecord r = one_exchange("GET /hello HTTP/9.Z\r\n\r\n", 400);
    EXPECT_EQ(r.method, "GET");  // read from the request line the parser refused
    EXPECT_EQ(r.target, "/hello");
}

TEST_F(ExchangeObserverTest, OversizeHeadersAreReportedAs431) {
    ExchangeRecord r = one_exchange(get_request("/hello", "X-Big: " + std::string(20 * 1024, 'h') + "\r\n"), 431);
    EXPECT_EQ(r.target, "/hello");
}

TEST_F(ExchangeObserverTest, OversizeBodyIsReportedAs413) {
    ExchangeRecord r = one_exchange("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 9000000\r\n\r\n", 413);
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/echo");
}

TEST_F(ExchangeObserverTest, StalledHeaderIsReportedAs408OnceTheServerGivesUp) {
    auto client = connect();
    ASSERT_TRUE(client->send_all("GET /hello HTTP/1.1\r\nHost"));
    auto response = client->read_response(10000);  // comes when the header timeout fires
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 408);
    EXPECT_TRUE(client->wait_closed(10000));
    auto records = collector_.records();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].status, 408);
    EXPECT_EQ(records[0].method, "GET");
    EXPECT_EQ(records[0].target, "/hello");
}

TEST_F(ExchangeObserverTest, ConnectionThatSendsNothingIsNotARequest) {
    auto client = connect();
    EXPECT_TRUE(client->wait_closed(10000));  // closed at the header timeout
    EXPECT_TRUE(client->received().empty());
    EXPECT_TRUE(collector_.records().empty());
}

TEST_F(ExchangeObserverTest, StreamAndPipelinedRequestsAreOneReportEach) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/items/7") + get_request("/hello") + get_request("/nope")));
    for (int status : {200, 200, 404}) {
        auto response = client->read_response();
        ASSERT_TRUE(response.has_value());
        EXPECT_EQ(response->status, status);
    }
    auto records = collector_.records();
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].target, "/items/7");
    EXPECT_EQ(records[0].route, "/items/*");
    EXPECT_EQ(records[1].target, "/hello");
    EXPECT_EQ(records[2].target, "/nope");
}

// The client leaves mid-stream: the report waits for the handler (it has the final annotation,
// token counts in the server) and says 499.
TEST_F(ExchangeObserverTest, ClientGoneIsReportedOnceTheHandlerFinishes) {
    auto client = connect();
    ASSERT_TRUE(client->send_all(get_request("/park")));
    std::shared_ptr<ResponseWriter> writer = parked_.writer.get_future().get();
    ASSERT_TRUE(client->read_until("\r\n\r\n", 5000));  // the stream's head arrived
    client->close();
    parked_.client_gone.get_future().get();
    EXPECT_TRUE(collector_.records().empty());
    writer->annotate(std::string("finished after the client left"));
    writer->finish();
    auto records = collector_.records();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].status, kStatusClientGone);
    EXPECT_EQ(records[0].route, "/park");
    const auto* note = std::any_cast<std::string>(&records[0].annotation);
    ASSERT_NE(note, nullptr);
    EXPECT_EQ(*note, "finished after the client left");
}

}  // namespace
}  // namespace hichat::api::test
