// Per-request timing from a scripted SSE transcript with chosen arrival times, as vLLM defines it.
#include "bench/stream_recorder.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hichat::tools::bench
