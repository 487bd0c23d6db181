// Per-request timing from a scripted SSE transcript with chosen arrival times, as vLLM defines it.
#include "bench/stream_recorder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hichat::tools::bench {
namespace {

std::string token(const std::string& text) {
    return R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":")" + text +
           R"(","logprobs":null,"finish_reason":null}]})";
}
const std::string kFinish = R"({"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]})";
const std::string kUsage =
    R"({"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":3,"total_tokens":19}})";

TEST(StreamRecorder, TimesTokenChunksLikeVllm) {
    StreamRecorder r(/*start_s=*/10.0, /*num_prompt_tokens=*/16);
    r.on_event(token("a"), 10.5);  // TTFT 0.5
    r.on_event(token(""), 10.7);   // a held-back character still is one token: ITL 0.2
    r.on_event(token("b"), 11.0);  // ITL 0.3
    r.on_event(kFinish, 11.0);     // end marker: moves E2E, adds no ITL gap
    r.on_event(kUsage, 11.1);      // usage only: moves nothing
    r.on_event("[DONE]", 11.1);
    EXPECT_TRUE(r.saw_done());
    const RequestOutcome o = r.finish("");
    ASSERT_TRUE(o.success) << o.error;
    EXPECT_DOUBLE_EQ(o.ttft_s, 0.5);
    EXPECT_DOUBLE_EQ(o.latency_s, 1.0);
    ASSERT_EQ(o.itl_s.size(), 2u);
    EXPECT_NEAR(o.itl_s[0], 0.2, 1e-12);
    EXPECT_NEAR(o.itl_s[1], 0.3, 1e-12);
    EXPECT_EQ(o.num_token_chunks, 3);
    EXPECT_EQ(o.num_output_tokens, 3);
    EXPECT_EQ(o.num_usage_prompt_tokens, 16);
    EXPECT_EQ(o.num_prompt_tokens, 16);
}

TEST(StreamRecorder, LastTokenMayCarryTheFinishReason) {
    StreamRecorder r(0.0, 4);
    r.on_event(token("a"), 0.1);
    r.on_event(R"({"choices":[{"index":0,"text":"b","finish_reason":"length"}]})", 0.4);
    const RequestOutcome o = r.finish("");
    ASSERT_TRUE(o.success);
    EXPECT_EQ(o.num_token_chunks, 2);
    EXPECT_EQ(o.num_output_tokens, 2);  // no usage: counted chunks
    ASSERT_EQ(o.itl_s.size(), 1u);
    EXPECT_NEAR(o.itl_s[0], 0.3, 1e-12);
}

TEST(StreamRecorder, ChatDeltasCount) {
    StreamRecorder r(0.0, 4);
    r.on_event(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"x"},"finish_reason":null}]})",
               0.2);
    r.on_event(R"({"choices":[{"index":0,"delta":{"content":"y"},"finish_reason":null}]})", 0.3);
    r.on_event(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})", 0.3);
    const RequestOutcome o = r.finish("");
    EXPECT_DOUBLE_EQ(o.ttft_s, 0.2);
    EXPECT_EQ(o.num_token_chunks, 2);
}

TEST(StreamRecorder, ReadsCachedTokensFromPromptTokensDetails) {
    StreamRecorder r(0.0, 16);
    r.on_event(token("a"), 0.1);
    r.on_event(R"({"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":1,)"
               R"("prompt_tokens_details":{"cached_tokens":12}}})",
               0.2);
    const RequestOutcome o = r.finish("");
    ASSERT_TRUE(o.success);
    EXPECT_EQ(o.num_cached_prompt_tokens, 12);
    EXPECT_EQ(o.num_usage_prompt_tokens, 16);
}

TEST(StreamRecorder, CachedTokensAbsentOrNotAnIntegerIsNotReported) {
    for (const char* usage : {R"({"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":1}})",
                              R"({"choices":[],"usage":{"prompt_tokens_details":null}})",
                              R"({"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":"7"}}})",
                              R"({"choices":[],"cached_tokens":7,"usage":{}})"}) {
        StreamRecorder r(0.0, 16);
        r.on_event(token("a"), 0.1);
        r.on_event(usage, 0.2);
        EXPECT_EQ(r.finish("").num_cached_prompt_tokens, -1) << usage;
    }
}

TEST(StreamRecorder, KeepsTheStreamedTextOnlyWhenAsked) {
    const std::string events[] = {token("Hel"), token("lo\\n"), token(""), token("\\u00e9"), kFinish, kUsage};
    StreamRecorder keep(0.0, 4, /*keep_text=*/true), drop(0.0, 4);
    for (const std::string& e : events) {
        keep.on_event(e, 0.1);
        drop.on_event(e, 0.1);
    }
    EXPECT_EQ(keep.finish("").output_text, "Hello\n\xc3\xa9");
    EXPECT_EQ(drop.finish("").output_text, "");
    StreamRecorder chat(0.0, 4, true);
    chat.on_event(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":"x"}}]})", 0.1);
    chat.on_event(R"({"choices":[{"index":0,"delta":{"content":"y"},"finish_reason":"stop"}]})", 0.2);
    EXPECT_EQ(chat.finish("").output_text, "xy");
}

TEST(StreamRecorder, FailuresCarryTheReason) {
    {
        StreamRecorder r(0.0, 4);
        r.on_event(kUsage, 0.1);
        const RequestOutcome o = r.finish("");
        EXPECT_FALSE(o.success);
        EXPECT_NE(o.error.find("no choices"), std::string::npos);
    }
    {
        StreamRecorder r(0.0, 4);
        r.on_event(token("a"), 0.1);
        r.on_event(R"({"error":{"message":"engine stopped","type":"server_error"}})", 0.2);
        const RequestOutcome o = r.finish("");
        EXPECT_FALSE(o.success);
        EXPECT_NE(o.error.find("engine stopped"), std::string::npos);
    }
    {
        StreamRecorder r(0.0, 4);
        r.on_event("{not json", 0.1);
        EXPECT_FALSE(r.finish("").success);
    }
    {
        StreamRecorder r(0.0, 4);
        r.on_event(token("a"), 0.1);
        const RequestOutcome o = r.finish("connection closed inside a chunked body");
        EXPECT_FALSE(o.success);
        EXPECT_EQ(o.error, "connection closed inside a chunked body");
    }
}

// The recorder reads events with a SAX pass; the reference looks the same fields up in the parsed
// document (what the recorder did before, and what vLLM's client does with json.loads).
struct ReferenceFields {
    bool ok = false;  // a JSON object without a non-null "error"
    bool counts_choices = false, is_token = false;
    std::optional<int> completion_tokens, prompt_tokens;
};

ReferenceFields reference_fields(std::string_view data) {
    using Json = nlohmann::json;
    ReferenceFields r;
    const Json j = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return r;
    if (const auto e = j.find("error"); e != j.end() && !e->is_null()) return r;
    r.ok = true;
    auto has_text = [](const Json& choice) {
        if (!choice.is_object()) return false;
        if (const auto t = choice.find("text"); t != choice.end() && t->is_string())
            return !t->get_ref<const std::string&>().empty();
        if (const auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
            if (const auto c = d->find("content"); c != d->end() && c->is_string())
                return !c->get_ref<const std::string&>().empty();
        }
        return false;
    };
    if (const auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
        r.counts_choices = true;
        const Json& choice = (*c)[0];
        bool end_marker = false;
        if (choice.is_object()) {
            const auto f = choice.find("finish_reason");
            end_marker = f != choice.end() && !f->is_null() && !has_text(choice);
        }
        r.is_token = !end_marker;
    }
    if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
        if (const auto n = u->find("completion_tokens"); n != u->end() && n->is_number_integer())
            r.completion_tokens = n->get<int>();
        if (const auto n = u->find("prompt_tokens"); n != u->end() && n->is_number_integer())
            r.prompt_tokens = n->get<int>();
    }
    return r;
}

// Events built from pieces that exercise the reader: field types, nesting, duplicates, order.
std::vector<std::string> tricky_events() {
    const std::vector<std::string> choice0 = {
        R"({"index":0,"text":"a","finish_reason":null})",
        R"({"index":0,"text":"","finish_reason":"length"})",
        R"({"text":"","finish_reason":null})",
        R"({"text":7,"delta":{"content":"x"},"finish_reason":"stop"})",
        R"({"text":null,"delta":{"content":""},"finish_reason":"stop"})",
        R"({"delta":{"role":"assistant","content":"y"},"finish_reason":null})",
        R"({"delta":{},"finish_reason":"stop"})",
        R"({"delta":[{"content":"z"}],"finish_reason":"stop"})",
        R"({"delta":{"content":"z","content":""},"finish_reason":"stop"})",
        R"({"text":"b","text":"","finish_reason":"stop"})",
        R"({"finish_reason":"stop","finish_reason":null,"text":""})",
        R"({"nested":{"text":"q","finish_reason":"stop"},"finish_reason":"stop"})",
        R"({"delta":{"x":{"content":"w"}},"finish_reason":"stop"})",
        R"("just a string")",
        R"([{"text":"","finish_reason":"stop"}])",
        R"(null)",
        R"({"text":"\u00e9\n","finish_reason":false})",
    };
    const std::vector<std::string> usage = {
        "", R"(,"usage":{"prompt_tokens":16,"completion_tokens":3})", R"(,"usage":{"completion_tokens":3.0})",
        R"(,"usage":{"completion_tokens":"3","prompt_tokens":-2})", R"(,"usage":null)",
        R"(,"usage":{"completion_tokens":5},"usage":{"prompt_tokens":9})",
        R"(,"usage":[{"completion_tokens":5}])", R"(,"x":{"usage":{"completion_tokens":5}})",
    };
    std::vector<std::string> events;
    for (const std::string& c : choice0) {
        for (const std::string& u : usage) {
            events.push_back(R"({"id":"cmpl-1","choices":[)" + c + R"(,{"text":"","finish_reason":"stop"}])" + u + "}");
            events.push_back(R"({"choices":[)" + c + "]" + u + R"(,"error":null})");
        }
    }
    for (const std::string& u : usage) {
        events.push_back(R"({"choices":[])" + u + "}");
        events.push_back(R"({"choices":{"0":{"text":"a"}})" + u + "}");
        events.push_back(R"({"choices":[{"text":"a"}],"choices":[])" + u + "}");
        events.push_back(R"({"choices":[],"choices":[{"text":""}])" + u + "}");
    }
    for (const char* e : {R"({"error":{"message":"boom"}})", R"({"error":"x","choices":[{"text":"a"}]})",
                          R"({"choices":[{"text":"a"}]} trailing)", R"({"choices":[{"text":"a"}],})", "", "{",
                          R"({"choices":[{"text":"a})", "[]", "1", R"({"a":1}{"b":2})", R"({"choices":[{"text":"a"}]})"}) {
        events.push_back(e);
    }
    return events;
}

TEST(StreamRecorder, ReadsFieldsAsTheParsedDocumentHasThem) {
    const auto events = tricky_events();
    ASSERT_GT(events.size(), 300u);
    for (const std::string& e : events) {
        SCOPED_TRACE(e);
        const ReferenceFields want = reference_fields(e);
        StreamRecorder r(0.0, 16);
        r.on_event(e, 0.25);
        r.on_event(R"({"choices":[{"text":"t"}]})", 0.5);  // one more token, so that finish() succeeds
        const RequestOutcome o = r.finish("");
        EXPECT_EQ(o.success, want.ok);
        if (!want.ok) continue;
        EXPECT_EQ(o.num_token_chunks, want.is_token ? 2 : 1);
        EXPECT_DOUBLE_EQ(o.ttft_s, want.counts_choices ? 0.25 : 0.5);
        EXPECT_EQ(o.num_output_tokens, want.completion_tokens.value_or(o.num_token_chunks));
        EXPECT_EQ(o.num_usage_prompt_tokens, want.prompt_tokens.value_or(-1));
    }
}

}  // namespace
}  // namespace hichat::tools::bench

namespace hichat::tools::bench {
namespace {

std::string responses_event(const std::string& type, const std::string& rest) {
    return R"({"type":")" + type + R"(","sequence_number":1)" + rest + "}";
}

TEST(StreamRecorder, ReadsAResponsesApiStream) {
    StreamRecorder r(/*start_s=*/1.0, /*num_prompt_tokens=*/0, /*keep_text=*/true, /*responses_events=*/true);
    r.on_event(responses_event("response.created", R"(,"response":{"id":"resp_1","status":"in_progress"})"), 1.1);
    r.on_event(responses_event("response.output_item.added", R"(,"item":{"type":"message"})"), 1.1);
    r.on_event(responses_event("response.output_text.delta", R"(,"delta":"Hel")"), 1.5);  // TTFT 0.5
    r.on_event(responses_event("response.output_text.delta", R"(,"delta":"lo")"), 1.75);
    r.on_event(responses_event("response.output_text.done", R"(,"text":"Hello")"), 1.75);
    r.on_event(responses_event("response.incomplete",
                               R"(,"response":{"id":"resp_1","usage":{"input_tokens":40,"output_tokens":2,)"
                               R"("input_tokens_details":{"cached_tokens":32}}})"),
               1.8);
    const RequestOutcome o = r.finish("");
    ASSERT_TRUE(o.success) << o.error;
    EXPECT_EQ(o.response_id, "resp_1");
    EXPECT_EQ(o.output_text, "Hello");
    EXPECT_DOUBLE_EQ(o.ttft_s, 0.5);
    EXPECT_DOUBLE_EQ(o.latency_s, 0.75);
    ASSERT_EQ(o.itl_s.size(), 1u);
    EXPECT_EQ(o.num_output_tokens, 2);
    EXPECT_EQ(o.num_usage_prompt_tokens, 40);
    EXPECT_EQ(o.num_cached_prompt_tokens, 32);
}

TEST(StreamRecorder, AResponsesStreamWithoutItsEndOrWithAFailureFails) {
    StreamRecorder cut(0, 0, false, true);
    cut.on_event(responses_event("response.output_text.delta", R"(,"delta":"a")"), 0.1);
    EXPECT_FALSE(cut.finish("").success) << "no response.completed";
    StreamRecorder failed(0, 0, false, true);
    failed.on_event(responses_event("response.output_text.delta", R"(,"delta":"a")"), 0.1);
    failed.on_event(responses_event("response.failed", R"(,"response":{"id":"resp_2"})"), 0.2);
    const RequestOutcome o = failed.finish("");
    EXPECT_FALSE(o.success);
    EXPECT_NE(o.error.find("response.failed"), std::string::npos) << o.error;
}

}  // namespace
}  // namespace hichat::tools::bench
