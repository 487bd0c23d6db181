#include "api/openai_request.h"

#include <gtest/gtest.h>

namespace hichat::api {
namespace {

std::optional<ApiError> parse_chat(const std::string& body, GenerationRequest& out) {
    return parse_generation_request(Endpoint::kChatCompletions, body, out);
}

TEST(OpenAiRequest, ParsesAChatRequest) {
    GenerationRequest g;
    auto e = parse_chat(R"({"model":"m","messages":[{"role":"system","content":"s"},
        {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
        "max_completion_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.05,"seed":3,
        "stop":["x","y"],"stream":true,"stream_options":{"include_usage":true},"priority":-2,"user":"u"})", g);
    ASSERT_FALSE(e) << e->message;
    ASSERT_EQ(g.messages.size(), 2u);
    EXPECT_EQ(g.messages[1].content, "ab");
    EXPECT_EQ(g.max_tokens, 7);
    EXPECT_FLOAT_EQ(g.sampling.temperature, 0.5f);
    EXPECT_EQ(g.sampling.top_k, 40);
    EXPECT_EQ(g.sampling.seed, 3u);
    EXPECT_EQ(g.stop, (std::vector<std::string>{"x", "y"}));
    EXPECT_TRUE(g.stream);
    EXPECT_TRUE(g.include_usage);
    EXPECT_EQ(g.priority, -2);
    EXPECT_EQ(g.user, "u");
}

// Length errors found later (prompt + max_tokens over the context) name the field the client sent.
TEST(OpenAiRequest, RemembersWhichMaxTokensFieldWasSent) {
    GenerationRequest g;
    ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":5})", g));
    EXPECT_EQ(g.max_tokens_field, "max_tokens");
    ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":5})", g));
    EXPECT_EQ(g.max_tokens_field, "max_completion_tokens");
    EXPECT_EQ(g.max_tokens, 5);
}

TEST(OpenAiRequest, CompletionPromptAsTextOrIds) {
    GenerationRequest g;
    ASSERT_FALSE(parse_generation_request(Endpoint::kCompletions, R"({"prompt":"hello"})", g));
    EXPECT_EQ(g.prompt, "hello");
    ASSERT_FALSE(parse_generation_request(Endpoint::kCompletions, R"({"prompt":[1,2,3]})", g));
    EXPECT_EQ(g.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
    auto e = parse_generation_request(Endpoint::kCompletions, R"({"prompt":{"a":1}})", g);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "prompt");
}

TEST(OpenAiRequest, ErrorsNameTheField) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})", "temperature"},
        {R"({"messages":[{"role":"user","content":"x"}],"temperature":3})", "temperature"},
        {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})", "max_tokens"},
        {R"({"messages":[{"role":"user","content":"x"}],"n":3})", "n"},
        {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role"},
        {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
        {R"({"messages":[]})", "messages"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", "stream"},
        {R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})", "stop"},
        {R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":1}})",
         "stream_options.include_usage"},
    };
    for (const auto& [body, param] : cases) {
        GenerationRequest g;
        auto e = parse_chat(body, g);
        ASSERT_TRUE(e) << body;
        EXPECT_EQ(e->http_status, 400) << body;
        EXPECT_EQ(e->param, param) << body;
        EXPECT_FALSE(e->message.empty());
    }
}

TEST(OpenAiRequest, InvalidUtf8IsReportedByField) {
    GenerationRequest g;
    auto e = parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"ok\\u00e9 \xC3\x28 x\"}]}", g);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "messages[0].content");
    auto e2 = parse_chat("{\"messages\":[{\"role\":\"user\",\"content\":\"fine\"}],\"user\":\"\xFF\"}", g);
    ASSERT_TRUE(e2);
    EXPECT_EQ(e2->param, "user");
}

TEST(OpenAiRequest, MalformedJsonAndNonObjects) {
    GenerationRequest g;
    for (const char* body : {"", "{", "[]", "null", R"({"messages":[{"role":"user","content":"x"}],"temperature":NaN})"}) {
        auto e = parse_chat(body, g);
        ASSERT_TRUE(e) << body;
        EXPECT_EQ(e->http_status, 400);
    }
}

TEST(OpenAiRequest, ControlCharactersAreStripped) {
    GenerationRequest g;
    ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"a\u0000b\u0007c\td\n"}]})", g));
    EXPECT_EQ(g.messages[0].content, "abc\td\n");
}

TEST(ApiError, RendersOpenAiShape) {
    ApiError e = bad_field("max_tokens", "too big");
    EXPECT_EQ(e.to_json(), R"({"error":{"code":null,"message":"too big","param":"max_tokens","type":"invalid_request_error"}})");
}

}  // namespace
}  // namespace hichat::api
