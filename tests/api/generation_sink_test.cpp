// GenerationSink turns engine ends that are not OpenAI finish reasons (deadline, cancellation) into
// errors: an HTTP error for a non-streamed request, an SSE error event then [DONE] for a streamed one.
#include "api/generation_sink.h"

#include "api/http/exchange.h"

#include <cstdio>
#include <any>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

using engine::FinishReason;
using Json = nlohmann::json;

// Stands in for the connection: records what the ResponseWriter hands it.
class RecordingSink final : public ResponseSink {
public:
    void deliver(ResponsePart part) override {
        std::lock_guard<std::mutex> lock(mu);
        parts.push_back(std::move(part));
    }
    std::mutex mu;
    std::vector<ResponsePart> parts;
};

struct SinkRun {
    std::vector<ResponsePart> parts;
    std::optional<AccessRecord> access;  // the sink's annotation, as the exchange observer saw it
};

// One request: a token event with text "hi", then a final event ending with `reason`.
SinkRun run_request(bool stream, FinishReason reason) {
    auto connection = std::make_shared<RecordingSink>();
    SinkRun run;
    auto observer = std::make_shared<const ExchangeObserver>([&run](const ExchangeRecord& r) {
        if (const auto* a = std::any_cast<AccessRecord>(&r.annotation)) run.access = *a;
    });
    auto exchange = std::make_shared<Exchange>(observer, "127.0.0.1:1");
    auto writer = std::make_shared<ResponseWriter>(connection, exchange);
    {
        GenerationSink sink(writer, {"chatcmpl-1", 1, "tiny", Endpoint::kChatCompletions}, stream,
                            /*include_usage=*/true, SinkContext{nullptr, nullptr}, AccessRecord{}, QuotaLease());
        sink.on_event({.token_ids = {7}, .text = "hi", .num_prompt_tokens = 3, .num_generated_tokens = 1});
        sink.on_event({.finish = reason, .num_prompt_tokens = 3, .num_generated_tokens = 1});
    }
    exchange->leave_connection(/*complete=*/true, 0);  // the connection queued the response: report
    run.parts = connection->parts;
    return run;
}

std::vector<std::string> sse_data(const std::vector<ResponsePart>& parts) {
    std::vector<std::string> out;
    for (const auto& p : parts) {
        if (p.kind == ResponsePart::Kind::kChunk) out.push_back(p.data);
    }
    return out;
}

TEST(GenerationSink, NonStreamedDeadlineIsA504) {
    SinkRun run = run_request(/*stream=*/false, FinishReason::kDeadline);
    ASSERT_EQ(run.parts.size(), 1u);
    EXPECT_EQ(run.parts[0].kind, ResponsePart::Kind::kFull);
    EXPECT_EQ(run.parts[0].status, 504);
    Json body = Json::parse(run.parts[0].data);
    EXPECT_EQ(body["error"]["code"], "request_timeout");
    EXPECT_EQ(body["error"]["type"], "server_error");
    EXPECT_NE(body["error"]["message"].get<std::string>().find("--request-timeout-s"), std::string::npos);
    EXPECT_FALSE(body.contains("choices"));
    ASSERT_TRUE(run.access.has_value());
    EXPECT_EQ(run.access->finish_reason, "request_timeout");  // the error's code, for the access log
}

TEST(GenerationSink, StreamedDeadlineEndsWithAnErrorEventThenDone) {
    SinkRun run = run_request(/*stream=*/true, FinishReason::kDeadline);
    ASSERT_GE(run.parts.size(), 2u);
    EXPECT_EQ(run.parts.front().kind, ResponsePart::Kind::kStreamHead);
    EXPECT_EQ(run.parts.front().status, 200);
    EXPECT_EQ(run.parts.back().kind, ResponsePart::Kind::kStreamEnd);
    std::vector<std::string> data = sse_data(run.parts);
    ASSERT_EQ(data.size(), 3u);  // the token, the error, [DONE]: no finish_reason chunk, no usage chunk
    EXPECT_NE(data[0].find("\"content\":\"hi\""), std::string::npos);
    ASSERT_EQ(data[1].rfind("data: ", 0), 0u);
    Json error = Json::parse(data[1].substr(6));
    EXPECT_EQ(error["error"]["code"], "request_timeout");
    EXPECT_EQ(data[2], kDoneChunk);
    for (const auto& d : data) EXPECT_EQ(d.find("\"deadline\""), std::string::npos) << d;
    ASSERT_TRUE(run.access.has_value());
    EXPECT_EQ(run.access->finish_reason, "request_timeout");
}

TEST(GenerationSink, CancelledByShutdownIsA503) {
    SinkRun run = run_request(/*stream=*/false, FinishReason::kCancelled);
    ASSERT_EQ(run.parts.size(), 1u);
    EXPECT_EQ(run.parts[0].status, 503);
    EXPECT_EQ(Json::parse(run.parts[0].data)["error"]["code"], "server_shutting_down");
    std::vector<std::string> streamed = sse_data(run_request(/*stream=*/true, FinishReason::kCancelled).parts);
    ASSERT_EQ(streamed.size(), 3u);
    EXPECT_EQ(Json::parse(streamed[1].substr(6))["error"]["code"], "server_shutting_down");
}

TEST(GenerationSink, NormalEndsCarryOpenAiFinishReasons) {
    SinkRun run = run_request(/*stream=*/false, FinishReason::kStop);
    ASSERT_EQ(run.parts.size(), 1u);
    EXPECT_EQ(run.parts[0].status, 200);
    Json body = Json::parse(run.parts[0].data);
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "hi");
    std::vector<std::string> streamed = sse_data(run_request(/*stream=*/true, FinishReason::kLength).parts);
    ASSERT_EQ(streamed.size(), 4u);  // token, finish, usage, [DONE]
    EXPECT_EQ(Json::parse(streamed[1].substr(6))["choices"][0]["finish_reason"], "length");
}

// Every engine end is either an OpenAI finish reason or an error, never both, never another word.
TEST(GenerationSink, EveryFinishIsAnOpenAiReasonOrAnError) {
    const std::set<std::string> openai = {"stop", "length", "content_filter", "tool_calls"};
    for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kContentFilter,
                           FinishReason::kCancelled, FinishReason::kDeadline}) {
        const std::string text = finish_reason_text(r);
        const bool is_error = finish_error(r).has_value();
        EXPECT_NE(text.empty(), !is_error) << engine::finish_reason_name(r);
        if (!text.empty()) EXPECT_TRUE(openai.count(text)) << text;
    }
}

}  // namespace
}  // namespace hichat::api

namespace hichat::api {
namespace {

// A streamed request the engine refuses (queue full, shutting down) must still get its HTTP error: the
// sink starts the stream with the engine's first event, not when it is made.
TEST(GenerationSink, StreamStartsWithTheFirstEvent) {
    auto connection = std::make_shared<RecordingSink>();
    auto writer = std::make_shared<ResponseWriter>(connection);
    GenerationSink sink(writer, {"chatcmpl-2", 1, "tiny", Endpoint::kChatCompletions}, /*stream=*/true,
                        /*include_usage=*/false, SinkContext{nullptr, nullptr}, AccessRecord{}, QuotaLease());
    EXPECT_FALSE(writer->response_started());
    sink.on_event({.token_ids = {7}, .text = "hi", .num_prompt_tokens = 3, .num_generated_tokens = 1});
    EXPECT_TRUE(writer->response_started());
    ASSERT_FALSE(connection->parts.empty());
    EXPECT_EQ(connection->parts.front().kind, ResponsePart::Kind::kStreamHead);
}

}  // namespace
}  // namespace hichat::api
