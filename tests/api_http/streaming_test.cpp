// Streaming responses (SSE over chunked encoding), client disconnects and graceful shutdown.
// The handlers write from their own threads, as the engine's token sink will.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "server_fixture.h"
#include "test_client.h"

namespace hichat::api::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string event(int i) { return "data: " + std::to_string(i) + "\n\n"; }

// Runs handler work on threads of its own and joins them at the end of the test.
class Workers {
public:
    ~Workers() { join(); }
    template <class Fn>
    void spawn(Fn fn) {
        std::lock_guard<std::mutex> lock(mu_);
        threads_.emplace_back(std::move(fn));
    }
    void join() {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& thread : threads_) thread.join();
        threads_.clear();
    }

private:
    std::mutex mu_;
    std::vector<std::thread> threads_;
};

TEST(StreamingTest, EventsAreFlushedAsTheyAreWritten) {
    Workers workers;
    std::promise<void> client_saw_first;
    std::shared_future<void> first_seen = client_saw_first.get_future().share();
    Router router;
    router.add("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        workers.spawn([w, first_seen] {
            w->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
            w->write(event(1));
            // The second event only follows once the client has the first: buffering would deadlock.
            if (first_seen.wait_for(std::chrono::seconds(5)) == std::future_status::ready) w->write(event(2));
            w->finish();
        });
    });
    auto server = start_or_fail(short_timeout_config(), std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all(get_request("/stream")));
    ASSERT_TRUE(client->read_until("data: 1", 3000)) << client->received();
    EXPECT_EQ(client->received().find("data: 2"), std::string::npos);
    client_saw_first.set_value();
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 200);
    EXPECT_TRUE(response->chunked);
    EXPECT_EQ(response->headers.get("Content-Type"), "text/event-stream");
    EXPECT_EQ(response->body, event(1) + event(2));
    EXPECT_TRUE(response->keep_alive);
}

TEST(StreamingTest, ClientDisconnectMidStreamIsReported) {
    Workers workers;
    std::promise<void> gone;
    std::future<void> gone_future = gone.get_future();
    std::atomic<int> write_after_gone{-1};
    Router router;
    router.add("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->on_client_gone([&gone] { gone.set_value(); });
        workers.spawn([w, &write_after_gone] {
            w->start_stream(200);
            w->write(event(1));
            for (int i = 0; i < 500 && !w->client_gone(); ++i) std::this_thread::sleep_for(milliseconds(10));
            write_after_gone = w->write(event(2)) ? 1 : 0;
            w->finish();
        });
    });
    auto server = start_or_fail(short_timeout_config(), std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all(get_request("/stream")));
    ASSERT_TRUE(client->read_until("data: 1", 3000));
    auto closed_at = Clock::now();
    client->close();
    ASSERT_EQ(gone_future.wait_for(std::chrono::seconds(3)), std::future_status::ready);
    EXPECT_LT(Clock::now() - closed_at, milliseconds(1000));
    workers.join();
    EXPECT_EQ(write_after_gone.load(), 0);
}

TEST(StreamingTest, ClientDisconnectBeforeAnyResponseIsReported) {
    std::promise<void> gone;
    std::future<void> gone_future = gone.get_future();
    std::shared_ptr<ResponseWriter> kept;
    std::mutex kept_mu;
    Router router;
    router.add("POST", "/slow", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->on_client_gone([&gone] { gone.set_value(); });
        std::lock_guard<std::mutex> lock(kept_mu);
        kept = w;  // answered "later" (never)
    });
    auto server = start_or_fail(short_timeout_config(), std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all("POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi"));
    std::this_thread::sleep_for(milliseconds(50));
    client->close();
    ASSERT_EQ(gone_future.wait_for(std::chrono::seconds(3)), std::future_status::ready);
    std::lock_guard<std::mutex> lock(kept_mu);
    ASSERT_NE(kept, nullptr);
    EXPECT_TRUE(kept->client_gone());
    kept->send(200, "text/plain", "too late");  // harmless
}

TEST(StreamingTest, Http10ClientGetsCloseDelimitedStream) {
    Workers workers;
    Router router;
    router.add("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        workers.spawn([w] {
            w->start_stream(200);
            for (int i = 0; i < 3; ++i) w->write(event(i));
            w->finish();
        });
    });
    auto server = start_or_fail(short_timeout_config(), std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all("GET /stream HTTP/1.0\r\n\r\n"));
    auto response = client->read_response();
    ASSERT_TRUE(response.has_value());
    EXPECT_FALSE(response->chunked);
    EXPECT_EQ(response->body, event(0) + event(1) + event(2));
}

TEST(StreamingTest, GracefulShutdownDrainsRunningStream) {
    Workers workers;
    constexpr int kNumEvents = 10;
    std::atomic<long long> finished_at_ns{0};
    Router router;
    router.add("GET", "/hello", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "text/plain", "hello");
    });
    router.add("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        workers.spawn([w, &finished_at_ns] {
            w->start_stream(200);
            for (int i = 0; i < kNumEvents; ++i) {
                w->write(event(i));
                std::this_thread::sleep_for(milliseconds(30));
            }
            finished_at_ns = Clock::now().time_since_epoch().count();
            w->finish();
        });
    });
    HttpServerConfig config = short_timeout_config();
    config.shutdown_drain_ms = 5000;
    auto server = start_or_fail(config, std::move(router));
    ASSERT_NE(server, nullptr);
    int port = server->port();

    auto idle = RawClient::connect(port);
    ASSERT_TRUE(idle->send_all(get_request("/hello")));
    ASSERT_TRUE(idle->read_response().has_value());
    auto streaming = RawClient::connect(port);
    ASSERT_TRUE(streaming->send_all(get_request("/stream")));
    ASSERT_TRUE(streaming->read_until("data: 0", 3000));

    auto shutdown_at = Clock::now();
    server->begin_shutdown();
    auto waited = std::async(std::launch::async, [&] {
        server->wait();
        return Clock::now();
    });
    EXPECT_TRUE(idle->wait_closed(1000));  // idle keep-alive connections close at once
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_EQ(RawClient::connect(port), nullptr);  // no longer accepting

    auto response = streaming->read_response();
    ASSERT_TRUE(response.has_value());
    std::string expected;
    for (int i = 0; i < kNumEvents; ++i) expected += event(i);
    EXPECT_EQ(response->body, expected);
    EXPECT_TRUE(streaming->wait_closed(2000));

    Clock::time_point wait_returned = waited.get();
    EXPECT_GE(wait_returned.time_since_epoch().count(), finished_at_ns.load());
    EXPECT_LT(wait_returned - shutdown_at, milliseconds(config.shutdown_drain_ms));
}

TEST(StreamingTest, ShutdownDeadlineForceClosesEndlessStream) {
    Workers workers;
    std::promise<void> gone;
    std::future<void> gone_future = gone.get_future();
    std::promise<void> started;
    std::future<void> started_future = started.get_future();
    Router router;
    router.add("GET", "/forever", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->on_client_gone([&gone] { gone.set_value(); });
        workers.spawn([w, &started] {
            w->start_stream(200);
            started.set_value();
            for (int i = 0; i < 1000 && w->write(event(i)); ++i) std::this_thread::sleep_for(milliseconds(10));
            w->finish();
        });
    });
    HttpServerConfig config = short_timeout_config();
    config.shutdown_drain_ms = 300;
    auto server = start_or_fail(config, std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all(get_request("/forever")));
    ASSERT_EQ(started_future.wait_for(std::chrono::seconds(3)), std::future_status::ready);

    auto start = Clock::now();
    server->begin_shutdown();
    server->wait();
    auto elapsed = Clock::now() - start;
    EXPECT_GE(elapsed, milliseconds(250));
    EXPECT_LT(elapsed, milliseconds(3000));
    EXPECT_EQ(gone_future.wait_for(milliseconds(100)), std::future_status::ready);
    EXPECT_TRUE(client->wait_closed(1000));
}

TEST(StreamingTest, WriterOutlivingTheServerIsHarmless) {
    std::shared_ptr<ResponseWriter> kept;
    std::promise<void> handled;
    Router router;
    router.add("GET", "/keep", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        kept = w;
        w->start_stream(200);
        handled.set_value();
    });
    auto server = start_or_fail(short_timeout_config(), std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all(get_request("/keep")));
    ASSERT_EQ(handled.get_future().wait_for(std::chrono::seconds(3)), std::future_status::ready);
    server.reset();  // force-closes the stream
    EXPECT_TRUE(kept->client_gone());
    EXPECT_FALSE(kept->write(event(1)));
    kept->finish();
}

// Many events written back to back (the engine writes one per token for every stream at once) may
// leave in fewer, larger writes; they must arrive whole and in order, from several writers at once.
TEST(StreamingTest, BurstsOfEventsArriveInOrder) {
    constexpr int kNumEvents = 5000;
    constexpr int kNumClients = 4;
    Workers workers;
    Router router;
    router.add("GET", "/burst", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        workers.spawn([w] {
            w->start_stream(200);
            for (int i = 0; i < kNumEvents; ++i) w->write(event(i));
            w->finish();
        });
    });
    auto server = start_or_fail(short_timeout_config(), std::move(router));
    ASSERT_NE(server, nullptr);
    std::string expected;
    for (int i = 0; i < kNumEvents; ++i) expected += event(i);
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int c = 0; c < kNumClients; ++c) {
        clients.push_back(RawClient::connect(server->port()));
        ASSERT_NE(clients.back(), nullptr);
        ASSERT_TRUE(clients.back()->send_all(get_request("/burst")));
    }
    for (int round = 0; round < 2; ++round) {  // the connection stays usable: a second burst on it
        for (auto& client : clients) {
            auto response = client->read_response(10000);
            ASSERT_TRUE(response.has_value()) << client->received().substr(0, 200);
            EXPECT_EQ(response->status, 200);
            EXPECT_TRUE(response->chunked);
            EXPECT_EQ(response->body, expected);
            EXPECT_TRUE(response->keep_alive);
            if (round == 0) {
                ASSERT_TRUE(client->send_all(get_request("/burst")));
            }
        }
    }
}

// The write deadline is per write, not per response: a stream that keeps making progress for many
// times write_timeout_ms is not cut.
TEST(StreamingTest, LongStreamThatProgressesOutlivesTheWriteTimeout) {
    Workers workers;
    Router router;
    router.add("GET", "/slow-stream", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        workers.spawn([w] {
            w->start_stream(200);
            for (int i = 0; i < 40; ++i) {
                w->write(event(i));
                std::this_thread::sleep_for(milliseconds(20));
            }
            w->finish();
        });
    });
    HttpServerConfig config = short_timeout_config();
    config.write_timeout_ms = 100;
    auto server = start_or_fail(config, std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all(get_request("/slow-stream")));
    auto response = client->read_response(10000);
    ASSERT_TRUE(response.has_value()) << client->received().substr(0, 200);
    std::string expected;
    for (int i = 0; i < 40; ++i) expected += event(i);
    EXPECT_EQ(response->body, expected);
}

// A client that stops reading: once the socket buffers are full, a write makes no progress for
// write_timeout_ms, and the connection is closed and reported gone (not held forever).
TEST(StreamingTest, StalledReaderHitsTheWriteTimeout) {
    Workers workers;
    std::promise<void> gone;
    std::future<void> gone_future = gone.get_future();
    Router router;
    router.add("GET", "/firehose", [&](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->on_client_gone([&gone] { gone.set_value(); });
        workers.spawn([w] {
            w->start_stream(200);
            const std::string block = "data: " + std::string(64 * 1024, 'x') + "\n\n";
            // At most ~1 GiB over 15 s: far more than any socket buffer holds.
            for (int i = 0; i < 15000 && w->write(block); ++i) std::this_thread::sleep_for(milliseconds(1));
            w->finish();
        });
    });
    HttpServerConfig config = short_timeout_config();
    config.write_timeout_ms = 300;
    auto server = start_or_fail(config, std::move(router));
    ASSERT_NE(server, nullptr);
    auto client = RawClient::connect(server->port());
    ASSERT_TRUE(client->send_all(get_request("/firehose")));
    ASSERT_TRUE(client->read_until("data: xxx", 3000));
    // Now the client reads nothing more.
    EXPECT_EQ(gone_future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    workers.join();
}

}  // namespace
}  // namespace hichat::api::test
