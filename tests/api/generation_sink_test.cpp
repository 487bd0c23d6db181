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

// Several choices merged by one sink (n > 1): the children's events interleave as the engine sends them.
namespace hichat::api {
namespace {

struct MultiRun {
    std::shared_ptr<RecordingSink> connection = std::make_shared<RecordingSink>();
    std::optional<AccessRecord> access;
    std::shared_ptr<Exchange> exchange;
    std::shared_ptr<ResponseWriter> writer;
    Metrics metrics;
    std::shared_ptr<GenerationSink> sink;
    std::vector<std::shared_ptr<engine::TokenSink>> children;
    int num_cancels = 0;

    MultiRun(Endpoint endpoint, bool stream, int n, bool include_usage = true) {
        auto observer = std::make_shared<const ExchangeObserver>([this](const ExchangeRecord& r) {
            if (const auto* a = std::any_cast<AccessRecord>(&r.annotation)) access = *a;
        });
        exchange = std::make_shared<Exchange>(observer, "127.0.0.1:1");
        writer = std::make_shared<ResponseWriter>(connection, exchange);
        sink = std::make_shared<GenerationSink>(writer, ResponseIds{"cmpl-9", 1, "tiny", endpoint}, stream, include_usage,
                                                SinkContext{&metrics, nullptr}, AccessRecord{}, QuotaLease(), n);
        sink->set_cancel_children([this] { ++num_cancels; });
        for (int i = 0; i < n; ++i) children.push_back(sink->choice_sink(i));
    }
    void token(int i, std::string text, int num_generated, double ttft_ms = 5) {
        children[static_cast<size_t>(i)]->on_event({.token_ids = {1}, .text = std::move(text), .num_prompt_tokens = 20,
                                                    .num_generated_tokens = num_generated, .ttft_ms = ttft_ms});
    }
    void end(int i, FinishReason reason, int num_generated, int num_cached, double ttft_ms = 5) {
        children[static_cast<size_t>(i)]->on_event({.finish = reason, .num_prompt_tokens = 20,
                                                    .num_generated_tokens = num_generated,
                                                    .num_cached_tokens = num_cached, .ttft_ms = ttft_ms});
    }
    std::vector<Json> events() {  // the SSE data events as JSON, [DONE] as the string "[DONE]"
        std::vector<Json> out;
        for (const std::string& d : sse_data(connection->parts)) {
            EXPECT_EQ(d.rfind("data: ", 0), 0u) << d;
            EXPECT_EQ(d.substr(d.size() - 2), "\n\n") << d;
            const std::string payload = d.substr(6, d.size() - 8);
            out.push_back(payload == "[DONE]" ? Json("[DONE]") : Json::parse(payload));
        }
        return out;
    }
    void report() { exchange->leave_connection(/*complete=*/true, 0); }
};

TEST(GenerationSinkChoices, NonStreamedBodyHasEveryChoiceInIndexOrderAndSummedUsage) {
    MultiRun run(Endpoint::kCompletions, /*stream=*/false, 3);
    run.token(2, "c", 1);
    run.token(0, "a", 1, /*ttft_ms=*/3);
    run.token(1, "b", 1);
    run.end(2, FinishReason::kStop, 1, 16);
    run.token(0, "a", 2, 3);
    run.end(0, FinishReason::kLength, 2, 0, 3);
    EXPECT_TRUE(run.connection->parts.empty()) << "nothing before the last choice ends";
    run.token(1, "bb", 2);
    run.end(1, FinishReason::kStop, 2, 16);
    run.report();
    ASSERT_EQ(run.connection->parts.size(), 1u);
    EXPECT_EQ(run.connection->parts[0].status, 200);
    Json body = Json::parse(run.connection->parts[0].data);
    ASSERT_EQ(body["choices"].size(), 3u);
    const char* texts[] = {"aa", "bbb", "c"};
    const char* reasons[] = {"length", "stop", "stop"};
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(body["choices"][i]["index"], i);
        EXPECT_EQ(body["choices"][i]["text"], texts[i]);
        EXPECT_EQ(body["choices"][i]["finish_reason"], reasons[i]);
    }
    EXPECT_EQ(body["usage"]["prompt_tokens"], 20) << "the prompt counts once";
    EXPECT_EQ(body["usage"]["completion_tokens"], 5);
    EXPECT_EQ(body["usage"]["total_tokens"], 25);
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0) << "the first child computed the prompt";
    ASSERT_TRUE(run.access.has_value());
    EXPECT_EQ(run.access->num_tokens_prompt, 20);
    EXPECT_EQ(run.access->num_tokens_completion, 5);
    EXPECT_EQ(run.access->finish_reason, "length,stop,stop");
    EXPECT_EQ(run.access->ttft_ms, 3) << "the first token of any choice";
    const std::string m = run.metrics.render();
    EXPECT_NE(m.find("hichat_prompt_tokens_total 20\n"), std::string::npos) << m;
    EXPECT_NE(m.find("hichat_generation_tokens_total 5\n"), std::string::npos);
    EXPECT_NE(m.find("hichat_request_prompt_tokens_count 1\n"), std::string::npos) << "one request";
    EXPECT_EQ(run.num_cancels, 0);
}

TEST(GenerationSinkChoices, StreamedChunksCarryOneChoiceEachThenOneUsageChunkAndOneDone) {
    MultiRun run(Endpoint::kChatCompletions, /*stream=*/true, 2);
    run.token(1, "x", 1);
    run.token(0, "p", 1);
    run.token(1, "y", 2);
    run.end(1, FinishReason::kStop, 2, 32);
    run.token(0, "q", 2);
    run.end(0, FinishReason::kLength, 2, 32);
    run.report();
    const std::vector<Json> ev = run.events();
    ASSERT_EQ(ev.size(), 8u);  // 4 deltas, 2 finish chunks, usage, [DONE]
    std::string text[2];
    int num_finish[2] = {0, 0}, num_role[2] = {0, 0};
    for (size_t k = 0; k + 2 < ev.size(); ++k) {
        ASSERT_EQ(ev[k]["choices"].size(), 1u) << ev[k];
        const Json& c = ev[k]["choices"][0];
        const int i = c["index"].get<int>();
        EXPECT_EQ(ev[k]["object"], "chat.completion.chunk");
        EXPECT_EQ(ev[k]["id"], "cmpl-9");
        if (c["delta"].contains("content")) text[i] += c["delta"]["content"].get<std::string>();
        num_role[i] += c["delta"].contains("role");
        if (!c["finish_reason"].is_null()) {
            ++num_finish[i];
            EXPECT_EQ(c["finish_reason"], i == 0 ? "length" : "stop");
        }
    }
    EXPECT_EQ(text[0], "pq");
    EXPECT_EQ(text[1], "xy");
    EXPECT_EQ(num_finish[0], 1);
    EXPECT_EQ(num_finish[1], 1);
    EXPECT_EQ(num_role[0], 1) << "each choice's first chunk carries the role";
    EXPECT_EQ(num_role[1], 1);
    EXPECT_EQ(ev[3]["choices"][0]["index"], 1) << "choice 1 finished while 0 still ran";
    EXPECT_TRUE(ev[6]["choices"].empty());
    EXPECT_EQ(ev[6]["usage"]["completion_tokens"], 4);
    EXPECT_EQ(ev[6]["usage"]["prompt_tokens"], 20);
    EXPECT_EQ(ev[6]["usage"]["prompt_tokens_details"]["cached_tokens"], 32);
    EXPECT_EQ(ev[7], "[DONE]");
    EXPECT_EQ(run.connection->parts.back().kind, ResponsePart::Kind::kStreamEnd);
}

// One child past the deadline ends the whole stream with the error event and [DONE], cancels the
// others (once), and what they send afterwards is dropped; the request is accounted once, at the end.
TEST(GenerationSinkChoices, AnErrorInOneChoiceEndsTheResponseAndCancelsTheOthers) {
    MultiRun run(Endpoint::kChatCompletions, /*stream=*/true, 3);
    run.token(0, "a", 1);
    run.token(1, "b", 1);
    run.end(1, FinishReason::kDeadline, 1, 0);
    EXPECT_EQ(run.num_cancels, 1);
    const size_t num_parts = run.connection->parts.size();
    EXPECT_EQ(run.connection->parts.back().kind, ResponsePart::Kind::kStreamEnd);
    run.token(2, "c", 1);
    run.end(0, FinishReason::kCancelled, 1, 0);
    EXPECT_EQ(run.metrics.render().find("hichat_request_prompt_tokens_count 1\n"), std::string::npos)
        << "not accounted while a child still runs";
    run.end(2, FinishReason::kCancelled, 1, 0);
    EXPECT_EQ(run.num_cancels, 1);
    EXPECT_EQ(run.connection->parts.size(), num_parts) << "nothing after the response ended";
    run.report();
    const std::vector<Json> ev = run.events();
    ASSERT_EQ(ev.size(), 4u);  // two deltas, the error, [DONE]
    EXPECT_EQ(ev[2]["error"]["code"], "request_timeout");
    EXPECT_EQ(ev[3], "[DONE]");
    ASSERT_TRUE(run.access.has_value());
    EXPECT_EQ(run.access->finish_reason, "request_timeout");
    EXPECT_NE(run.metrics.render().find("hichat_request_prompt_tokens_count 1\n"), std::string::npos);
    EXPECT_NE(run.metrics.render().find("hichat_generation_tokens_total 3\n"), std::string::npos);
}

TEST(GenerationSinkChoices, NonStreamedErrorIsTheRequestsError) {
    MultiRun run(Endpoint::kChatCompletions, /*stream=*/false, 2);
    run.token(0, "a", 1);
    run.end(0, FinishReason::kStop, 1, 0);
    run.end(1, FinishReason::kCancelled, 0, 0);
    EXPECT_EQ(run.num_cancels, 0) << "the last child: nothing left to cancel";
    run.report();
    ASSERT_EQ(run.connection->parts.size(), 1u);
    EXPECT_EQ(run.connection->parts[0].status, 503);
    EXPECT_EQ(Json::parse(run.connection->parts[0].data)["error"]["code"], "server_shutting_down");
}

}  // namespace
}  // namespace hichat::api
