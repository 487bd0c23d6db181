// Unit tests without sockets: config validation, JSON errors (checked with nlohmann::json as the
// reference parser), wire format (checked with Beast's response parser), ResponseWriter, Router.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/http/http_error.h"
#include "api/http/http_server_config.h"
#include "api/http/outbound_bytes.h"
#include "api/http/response_writer.h"
#include "api/http/router.h"
#include "api/http/wire_format.h"
#include "test_client.h"

namespace hichat::api {
namespace {

using test::parse_response;

TEST(HttpServerConfigTest, DefaultsAreValidAndErrorsNameTheField) {
    EXPECT_TRUE(HttpServerConfig{}.validate().ok());
    HttpServerConfig config;
    config.port = 70000;
    EXPECT_NE(config.validate().message().find("port"), std::string::npos);
    config = {};
    config.num_io_threads = 0;
    EXPECT_NE(config.validate().message().find("num_io_threads"), std::string::npos);
    config = {};
    config.tls_cert_file = "cert.pem";
    EXPECT_NE(config.validate().message().find("tls_key_file"), std::string::npos);
    config = {};
    config.body_timeout_ms = 0;
    EXPECT_NE(config.validate().message().find("body_timeout_ms"), std::string::npos);
    config = {};
    config.max_body_bytes = 0;
    EXPECT_NE(config.validate().message().find("max_body_bytes"), std::string::npos);
}

TEST(HttpErrorTest, ErrorJsonIsValidOpenAiShape) {
    std::string message = "bad \"field\" \\ with\nnewline, tab\t, ctrl \x01 and caf\xc3\xa9";
    auto json = nlohmann::json::parse(error_json(message, kInvalidRequestError, "bad_request"));
    EXPECT_EQ(json["error"]["message"], message);
    EXPECT_EQ(json["error"]["type"], "invalid_request_error");
    EXPECT_TRUE(json["error"]["param"].is_null());
    EXPECT_EQ(json["error"]["code"], "bad_request");
    EXPECT_TRUE(nlohmann::json::parse(error_json("x", kServerError, ""))["error"]["code"].is_null());
}

TEST(HttpErrorTest, InvalidUtf8BecomesReplacementCharacter) {
    // Lone continuation byte, truncated sequence, overlong encoding, surrogate. nlohmann::json
    // rejects invalid UTF-8, so a successful parse shows the output is valid.
    std::string message = "a\x80" "b\xe2\x82" "c\xc0\xaf" "d\xed\xa0\x80";
    std::string decoded = nlohmann::json::parse(json_quote(message)).get<std::string>();
    const std::string replacement = "\xef\xbf\xbd";  // U+FFFD
    EXPECT_NE(decoded.find(replacement), std::string::npos);
    for (size_t at; (at = decoded.find(replacement)) != std::string::npos;) decoded.erase(at, replacement.size());
    EXPECT_EQ(decoded, "abcd");
    // Valid multi-byte sequences pass through unchanged.
    EXPECT_EQ(nlohmann::json::parse(json_quote("\xf0\x9f\x98\x80 caf\xc3\xa9")).get<std::string>(),
              "\xf0\x9f\x98\x80 caf\xc3\xa9");
}

TEST(WireFormatTest, BeastParsesOurChunkedResponse) {
    HeaderList extra = {{"X-Request-Id", "abc"}};
    std::string wire = format_response_head({201, "text/event-stream", &extra, std::nullopt, true, true});
    std::vector<std::string> pieces = {"data: 1\n\n", std::string(300, 'x'), "z"};
    for (const auto& piece : pieces) wire += format_chunk(piece);
    wire += kLastChunk;
    auto response = parse_response(wire);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 201);
    EXPECT_TRUE(response->chunked);
    EXPECT_TRUE(response->keep_alive);
    EXPECT_EQ(response->body, pieces[0] + pieces[1] + pieces[2]);
    EXPECT_EQ(response->headers.get("x-request-id"), "abc");
    EXPECT_EQ(response->headers.get("content-type"), "text/event-stream");
}

TEST(WireFormatTest, ChunkSizeLineIsHexAsPrintfWritesIt) {
    for (size_t size : {size_t{1}, size_t{9}, size_t{10}, size_t{15}, size_t{16}, size_t{255}, size_t{4096},
                        size_t{123456789}, SIZE_MAX}) {
        char reference[32];
        std::snprintf(reference, sizeof(reference), "%zx\r\n", size);
        EXPECT_EQ(chunk_size_line(size), reference);
    }
}

std::string concat(const std::vector<boost::asio::const_buffer>& buffers) {
    std::string out;
    for (const auto& b : buffers) out.append(static_cast<const char*>(b.data()), b.size());
    return out;
}

TEST(OutboundBytesTest, StreamDataBecomesOneChunkPerBatchInOrder) {
    OutboundBytes out;
    out.queue("HEAD");
    out.set_chunked(true);
    out.add_stream_data("data: 1\n\n");
    out.add_stream_data("data: 2\n\n");
    out.add_stream_data("");
    out.queue("X");  // after the data added so far
    out.add_stream_data("data: 3\n\n");
    ASSERT_TRUE(out.has_queued());
    const std::string expected = "HEAD" + format_chunk("data: 1\n\ndata: 2\n\n") + "X" + format_chunk("data: 3\n\n");
    EXPECT_EQ(concat(out.start_batch()), expected);
    EXPECT_FALSE(out.has_queued());
    EXPECT_TRUE(out.batch_in_progress());
    // The socket takes the batch in pieces of every size.
    size_t written = 0;
    for (size_t step : {size_t{3}, size_t{1}, size_t{0}, size_t{9}}) {
        EXPECT_FALSE(out.consume(step));
        written += step;
        EXPECT_EQ(concat(out.batch()), expected.substr(written));
    }
    out.add_stream_data("late");  // waits for the next batch
    EXPECT_TRUE(out.consume(expected.size() - written));
    EXPECT_FALSE(out.batch_in_progress());
    out.set_chunked(false);  // an HTTP/1.0 stream: data as is
    EXPECT_EQ(concat(out.start_batch()), "late");
    EXPECT_TRUE(out.consume(4));
    EXPECT_FALSE(out.has_queued());
}

TEST(WireFormatTest, BeastParsesOurFixedLengthResponse) {
    std::string body = "{\"ok\":true}";
    std::string wire = format_response_head({404, "application/json", nullptr, body.size(), false, false}) + body;
    auto response = parse_response(wire);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->status, 404);
    EXPECT_FALSE(response->keep_alive);
    EXPECT_EQ(response->body, body);
    EXPECT_EQ(wire.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
}

// Records what a writer delivers, as the connection would receive it.
class CapturingSink : public ResponseSink {
public:
    void deliver(ResponsePart part) override {
        std::lock_guard<std::mutex> lock(mu_);
        parts_.push_back(std::move(part));
    }
    std::vector<ResponsePart> parts() {
        std::lock_guard<std::mutex> lock(mu_);
        return parts_;
    }

private:
    std::mutex mu_;
    std::vector<ResponsePart> parts_;
};

using Kind = ResponsePart::Kind;

TEST(ResponseWriterTest, StreamPartsArriveInOrder) {
    auto sink = std::make_shared<CapturingSink>();
    auto writer = std::make_shared<ResponseWriter>(sink);
    writer->start_stream(200);
    EXPECT_TRUE(writer->write("a"));
    EXPECT_TRUE(writer->write(""));  // ignored
    EXPECT_TRUE(writer->write("b"));
    writer->finish();
    writer.reset();  // completed: no kAbandoned
    auto parts = sink->parts();
    ASSERT_EQ(parts.size(), 4u);
    EXPECT_EQ(parts[0].kind, Kind::kStreamHead);
    EXPECT_EQ(parts[0].content_type, "text/event-stream");
    EXPECT_EQ(parts[1].data, "a");
    EXPECT_EQ(parts[2].data, "b");
    EXPECT_EQ(parts[3].kind, Kind::kStreamEnd);
}

TEST(ResponseWriterTest, ClientGoneStopsWritesAndFiresCallbackOnce) {
    auto sink = std::make_shared<CapturingSink>();
    auto writer = std::make_shared<ResponseWriter>(sink);
    int num_calls = 0;
    writer->on_client_gone([&] { ++num_calls; });
    writer->start_stream(200);
    writer->notify_client_gone();
    writer->notify_client_gone();
    EXPECT_EQ(num_calls, 1);
    EXPECT_TRUE(writer->client_gone());
    EXPECT_FALSE(writer->write("dropped"));
    // Registering after the fact runs the callback at once.
    writer->on_client_gone([&] { ++num_calls; });
    EXPECT_EQ(num_calls, 2);
    writer->finish();
    EXPECT_EQ(sink->parts().size(), 1u);  // only the head
}

TEST(ResponseWriterTest, DroppedWriterReportsAbandonedUnlessDetached) {
    auto sink = std::make_shared<CapturingSink>();
    { auto writer = std::make_shared<ResponseWriter>(sink); }
    ASSERT_EQ(sink->parts().size(), 1u);
    EXPECT_EQ(sink->parts()[0].kind, Kind::kAbandoned);

    auto sink2 = std::make_shared<CapturingSink>();
    {
        auto writer = std::make_shared<ResponseWriter>(sink2);
        writer->detach();
        writer->send(200, "text/plain", "after detach");
    }
    EXPECT_TRUE(sink2->parts().empty());
}

HttpRequest make_request(std::string method, std::string path) {
    HttpRequest request;
    request.method = std::move(method);
    request.path = std::move(path);
    request.target = request.path;
    return request;
}

ResponsePart route(const Router& router, const std::string& method, const std::string& path) {
    auto sink = std::make_shared<CapturingSink>();
    auto writer = std::make_shared<ResponseWriter>(sink);
    router.dispatch(make_request(method, path), writer);
    writer.reset();
    auto parts = sink->parts();
    return parts.empty() ? ResponsePart{} : parts.front();
}

Router make_test_router() {
    Router router;
    auto reply = [](std::string text) {
        return [text](const HttpRequest&, std::shared_ptr<ResponseWriter> w) { w->send(200, "text/plain", text); };
    };
    router.add("GET", "/v1/models", reply("list"));
    router.add("GET", "/v1/models/*", reply("one"));
    router.add("POST", "/v1/chat/completions", reply("chat"));
    router.add("GET", "/throws", [](const HttpRequest&, std::shared_ptr<ResponseWriter>) {
        throw std::runtime_error("boom");
    });
    return router;
}

TEST(RouterTest, ExactPrefixAndHeadRoutes) {
    Router router = make_test_router();
    EXPECT_EQ(route(router, "GET", "/v1/models").data, "list");
    EXPECT_EQ(route(router, "GET", "/v1/models/llama").data, "one");
    EXPECT_EQ(route(router, "POST", "/v1/chat/completions").data, "chat");
    EXPECT_EQ(route(router, "HEAD", "/v1/models").data, "list");  // the connection drops the body
}

TEST(RouterTest, NotFoundMethodNotAllowedAndExceptions) {
    Router router = make_test_router();
    ResponsePart not_found = route(router, "GET", "/v1/modelsX");
    EXPECT_EQ(not_found.status, 404);
    EXPECT_EQ(nlohmann::json::parse(not_found.data)["error"]["type"], "invalid_request_error");

    ResponsePart not_allowed = route(router, "GET", "/v1/chat/completions");
    EXPECT_EQ(not_allowed.status, 405);
    ASSERT_EQ(not_allowed.headers.size(), 1u);
    EXPECT_EQ(not_allowed.headers[0].first, "Allow");
    EXPECT_EQ(not_allowed.headers[0].second, "POST, OPTIONS");
    EXPECT_EQ(nlohmann::json::parse(not_allowed.data)["error"]["code"], "method_not_allowed");

    ResponsePart crashed = route(router, "GET", "/throws");
    EXPECT_EQ(crashed.status, 500);
    auto json = nlohmann::json::parse(crashed.data);
    EXPECT_EQ(json["error"]["type"], "server_error");
    EXPECT_NE(json["error"]["message"].get<std::string>().find("boom"), std::string::npos);
}

TEST(RouterTest, DispatchNamesTheMatchedPattern) {
    Router router = make_test_router();
    auto pattern = [&router](const std::string& method, const std::string& path) {
        auto writer = std::make_shared<ResponseWriter>(std::make_shared<CapturingSink>());
        return std::string(router.dispatch(make_request(method, path), writer));
    };
    EXPECT_EQ(pattern("GET", "/v1/models"), "/v1/models");
    EXPECT_EQ(pattern("GET", "/v1/models/a/b"), "/v1/models/*");
    EXPECT_EQ(pattern("HEAD", "/v1/models/x"), "/v1/models/*");
    EXPECT_EQ(pattern("DELETE", "/v1/chat/completions"), "/v1/chat/completions");  // 405
    EXPECT_EQ(pattern("GET", "/nope"), "");                                         // 404
}

TEST(RouterTest, OptionsWithoutARouteOfItsOwnGets204WithAllow) {
    ResponsePart options = route(make_test_router(), "OPTIONS", "/v1/chat/completions");
    EXPECT_EQ(options.status, 204);
    EXPECT_TRUE(options.data.empty());
    ASSERT_EQ(options.headers.size(), 1u);
    EXPECT_EQ(options.headers[0].second, "POST, OPTIONS");
}

TEST(HttpRequestTest, RequestLinePeekAndPercentDecoding) {
    EXPECT_EQ(peek_request_line("GET /a?b HTTP/1.1\r\nHost: x\r\n"), std::make_pair(std::string("GET"), std::string("/a?b")));
    EXPECT_EQ(peek_request_line("POST /x"), std::make_pair(std::string("POST"), std::string("/x")));
    EXPECT_EQ(peek_request_line("GE"), std::make_pair(std::string("GE"), std::string()));
    EXPECT_EQ(peek_request_line(""), std::make_pair(std::string(), std::string()));
    EXPECT_EQ(percent_decode("meta-llama%2FLlama-3%20x"), "meta-llama/Llama-3 x");
    EXPECT_EQ(percent_decode("plain"), "plain");
    EXPECT_EQ(percent_decode("%e2%82%ac"), "\xe2\x82\xac");
    EXPECT_FALSE(percent_decode("bad%2").has_value());
    EXPECT_FALSE(percent_decode("bad%zz").has_value());
    EXPECT_FALSE(percent_decode("%").has_value());
}

TEST(WireFormatTest, NoContentLengthOn204) {
    HeaderList none;
    std::string head = format_response_head({.status = 204, .extra = &none, .content_length = 0});
    EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
    head = format_response_head({.status = 200, .extra = &none, .content_length = 0});
    EXPECT_NE(head.find("Content-Length: 0"), std::string::npos) << head;
}

TEST(HttpRequestTest, HeaderLookupIgnoresCaseAndTargetSplits) {
    HttpHeaders headers;
    headers.add("Content-Type", "application/json");
    EXPECT_EQ(headers.get("content-TYPE"), "application/json");
    EXPECT_FALSE(headers.contains("Content-Length"));
    auto [path, query] = split_target("/v1/x?a=1&b=2");
    EXPECT_EQ(path, "/v1/x");
    EXPECT_EQ(query, "a=1&b=2");
    EXPECT_EQ(split_target("/plain").second, "");
}

}  // namespace
}  // namespace hichat::api
