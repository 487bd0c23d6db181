// HTTP request path: arbitrary bytes sent over a real TCP connection to an in-process HttpServer
// (Beast's parser under our Connection: limits, timeouts, keep-alive, pipelining, 100-continue,
// HEAD, HTTP/1.0, Router, ResponseWriter, chunked streaming, error replies).
// After the fuzzed bytes the client sends one last request with "Connection: close" and reads until
// the server closes; incomplete requests end in the server's short timeouts.
// Invariants: the server always answers and then closes (no hang, no crash); everything it sends is a
// sequence of well-formed HTTP/1.1 responses with a known status; every JSON body is a JSON object,
// and every error (4xx/5xx) body is the OpenAI error object {"error": {message, type, param, code}}.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include "api/http/http_server.h"
#include "fuzz_support.h"

namespace {

using hichat::api::HttpRequest;
using hichat::api::ResponseWriter;
using hichat::fuzz::fail;
using hichat::fuzz::require;
namespace http = boost::beast::http;

constexpr std::string_view kLastRequest = "GET /health HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n";

// What the echo routes answer: a digest of the body, never the body itself, so that no response
// body can look like a response head (see parse_responses()).
std::string digest(const HttpRequest& r) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : r.body) h = (h ^ c) * 1099511628211ull;
    return nlohmann::json({{"method", r.method}, {"bytes", r.body.size()}, {"fnv", h}, {"query_bytes", r.query.size()}})
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

hichat::api::Router make_router() {
    hichat::api::Router router;
    router.add("GET", "/health", [](const HttpRequest&, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "application/json", R"({"status":"ok"})");
    });
    router.add("POST", "/echo", [](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "application/json", digest(r), {{"X-Request-Bytes", std::to_string(r.body.size())}});
    });
    router.add("POST", "/stream", [](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
        w->start_stream(200);
        for (size_t i = 0; i < 3; ++i) w->write("data: " + std::to_string(i) + " " + digest(r) + "\n\n");
        w->write("");  // ignored
        w->finish();
    });
    router.add("GET", "/v1/models/*", [](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
        w->send(200, "application/json", nlohmann::json({{"path_bytes", r.path.size()}}).dump());
    });
    router.add("POST", "/v1/models/*", [](const HttpRequest& r, std::shared_ptr<ResponseWriter> w) {
        w->send(201, "text/plain", "created");
    });
    router.add("POST", "/throw", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {
        throw std::runtime_error("handler failed");
    });
    router.add("GET", "/drop", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {});  // no answer: 500
    return router;
}

const hichat::api::HttpServer& server() {
    static const std::unique_ptr<hichat::api::HttpServer> s = [] {
        hichat::api::HttpServerConfig config;
        config.port = 0;
        config.num_io_threads = 1;
        config.max_header_bytes = 2048;  // small limits, so that the fuzzer reaches 413 and 431
        config.max_body_bytes = 4096;
        config.header_timeout_ms = 200;  // incomplete requests end quickly (408)
        config.body_timeout_ms = 200;
        config.idle_keepalive_timeout_ms = 500;
        config.shutdown_drain_ms = 1000;
        auto started = hichat::api::HttpServer::start(config, make_router());
        if (!started.ok()) fail("cannot start the server: " + started.status().message());
        return std::move(started).value();
    }();
    return *s;
}

// A socket connected to the server. libFuzzer's -timeout alarm (SIGALRM every 16 s) can interrupt a
// blocking connect(): that attempt is dropped and a fresh socket tried.
int connect_to_server() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server().port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int attempt = 0;; ++attempt) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        require(fd >= 0, "socket() failed");
        timeval timeout{20, 0};  // far beyond the server's own timeouts: no answer by then is a hang
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
        const int error = errno;
        ::close(fd);
        if (error != EINTR || attempt == 4) fail(std::string("connect() failed: ") + std::strerror(error));
    }
}

// Sends `bytes` and the closing request, then returns everything the server sent until it closed.
std::string exchange(std::string_view bytes) {
    const int fd = connect_to_server();
    std::string out(bytes);
    out += kLastRequest;
    for (size_t sent = 0; sent < out.size();) {
        ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the server may close early (413, 431, 400) without reading everything
        sent += static_cast<size_t>(n);
    }
    std::string received;
    char buf[16384];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == ECONNRESET) break;
            ::close(fd);
            fail(std::string("the server neither answered nor closed: ") + std::strerror(errno));
        }
        received.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return received;
}

void check_body(int status, const http::response<http::string_body>& response) {
    auto type = response[http::field::content_type];
    if (std::string_view(type.data(), type.size()).rfind("application/json", 0) != 0) {
        require(status < 400, "error response " + std::to_string(status) + " is not JSON");
        return;
    }
    const auto j = nlohmann::json::parse(response.body(), nullptr, false);
    require(j.is_object(), "JSON body is not an object: " + response.body());
    if (status < 400) return;
    const auto& e = j.contains("error") ? j["error"] : nlohmann::json();
    require(e.is_object() && e.contains("message") && e["message"].is_string() && e.contains("type") &&
                e["type"].is_string() && e.contains("param") && e.contains("code"),
            "error body is not {\"error\": {message, type, param, code}}: " + response.body());
}

bool known_status(int s) {
    return s == 100 || s == 200 || s == 201 || s == 400 || s == 404 || s == 405 || s == 408 || s == 413 || s == 431 ||
           s == 500;
}

// True if the response at the start of `bytes` is one to a HEAD request: its head announces a body
// but the next response follows at once, or the connection ends there. (No body of the routes above
// starts with "HTTP/1."; a response cut right after its head would pass as a HEAD answer.)
bool is_head_response(std::string_view bytes) {
    http::response_parser<http::empty_body> probe;
    probe.eager(false);  // stop after the head
    boost::beast::error_code ec;
    const size_t used = probe.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    require(!ec && probe.is_header_done(), "bad response head: " + ec.message() + " in: " + std::string(bytes));
    const std::string_view rest = bytes.substr(used);
    return !probe.is_done() && (rest.empty() || rest.rfind("HTTP/1.", 0) == 0);
}

// Parses the responses one after another; returns how many final (non-1xx) ones there were.
int parse_responses(std::string_view bytes) {
    int num_final = 0;
    while (!bytes.empty()) {
        http::response_parser<http::string_body> parser;
        const bool head = is_head_response(bytes);
        parser.skip(head);  // must be set before the parser sees a byte
        parser.body_limit(64u << 20);
        boost::beast::error_code ec;
        while (!parser.is_done() && !bytes.empty()) {
            const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
            if (ec == http::error::need_more) break;
            require(!ec, "bad response: " + ec.message());
            bytes.remove_prefix(used);
        }
        if (!parser.is_done()) {
            parser.put_eof(ec);  // HTTP/1.0 streams end when the connection closes
            require(!ec && parser.is_done(), "truncated response: " + ec.message());
        }
        const int status = static_cast<int>(parser.get().result_int());
        require(known_status(status), "unexpected status " + std::to_string(status));
        if (status >= 200) {
            ++num_final;
            if (!head) check_body(status, parser.get());
        }
    }
    return num_final;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string received = exchange(std::string_view(reinterpret_cast<const char*>(data), size));
    require(parse_responses(received) >= 1, "the server closed without answering");
    return 0;
}
