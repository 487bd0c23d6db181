#include "api/openai_request.h"

#include <gtest/gtest.h>

#include "sampling/sampling_params.h"

namespace hichat::api {
namespace {

std::optional<ApiError> parse_chat(const std::string& body, GenerationRequest& out) {
    return parse_generation_request(Endpoint::kChatCompletions, body, out);
}

// A valid chat body with `extra` (",\"field\":value" pieces) appended.
std::string chat_with(const std::string& extra) {
    return R"({"messages":[{"role":"user","content":"x"}])" + extra + "}";
}

std::optional<ApiError> parse_extra(Endpoint endpoint, const std::string& extra) {
    GenerationRequest g;
    const std::string body =
        endpoint == Endpoint::kChatCompletions ? chat_with(extra) : R"({"prompt":"x")" + extra + "}";
    return parse_generation_request(endpoint, body, g);
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
        {R"({"messages":[{"role":"user","content":"x"}],"n":17})", "n"},
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

namespace hichat::api {
namespace {

// Big integers are reported as the client wrote them, never wrapped to negative numbers.
TEST(OpenAiRequest, BigIntegersAreReportedAsWritten) {
    for (const char* big : {"9223372036854775808", "18446744073709551615"}) {
        auto e = parse_extra(Endpoint::kChatCompletions, std::string(R"(,"max_tokens":)") + big);
        ASSERT_TRUE(e) << big;
        EXPECT_EQ(e->param, "max_tokens");
        EXPECT_EQ(e->message, std::string("max_tokens must be an integer in [1, 2147483647], got ") + big);
    }
    auto beyond = parse_extra(Endpoint::kCompletions, R"(,"max_tokens":18446744073709551616)");
    ASSERT_TRUE(beyond);
    EXPECT_EQ(beyond->param, "max_tokens");
    EXPECT_NE(beyond->message.find("must be an integer in [1, 2147483647], got 1.8446744073709552e+19"),
              std::string::npos)
        << beyond->message;
    auto negative = parse_extra(Endpoint::kCompletions, R"(,"max_tokens":-9223372036854775808)");
    ASSERT_TRUE(negative);
    EXPECT_EQ(negative->message, "max_tokens must be an integer in [1, 2147483647], got -9223372036854775808");
    auto fraction = parse_extra(Endpoint::kCompletions, R"(,"max_tokens":2.5)");
    ASSERT_TRUE(fraction);
    EXPECT_EQ(fraction->message, "max_tokens must be an integer, got 2.5");
    auto integral_float = parse_extra(Endpoint::kCompletions, R"(,"max_tokens":3.0)");
    ASSERT_TRUE(integral_float);
    EXPECT_EQ(integral_float->message, "max_tokens must be an integer, got 3.0");
}

// A seed is any 64-bit integer; negative ones are taken modulo 2^64.
TEST(OpenAiRequest, SeedTakesEvery64BitInteger) {
    GenerationRequest g;
    ASSERT_FALSE(parse_chat(chat_with(R"(,"seed":18446744073709551615)"), g));
    EXPECT_EQ(g.sampling.seed, UINT64_MAX);
    ASSERT_FALSE(parse_chat(chat_with(R"(,"seed":-1)"), g));
    EXPECT_EQ(g.sampling.seed, UINT64_MAX);
    ASSERT_FALSE(parse_chat(chat_with(R"(,"seed":-9223372036854775808)"), g));
    EXPECT_EQ(g.sampling.seed, uint64_t{1} << 63);
    ASSERT_FALSE(parse_chat(chat_with(R"(,"seed":0)"), g));
    EXPECT_EQ(g.sampling.seed, 0u);
    auto e = parse_chat(chat_with(R"(,"seed":18446744073709551616)"), g);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "seed");
    EXPECT_NE(e->message.find("seed must be an integer in [-9223372036854775808, 18446744073709551615], got "),
              std::string::npos)
        << e->message;
    auto e2 = parse_chat(chat_with(R"(,"seed":"7")"), g);
    ASSERT_TRUE(e2);
    EXPECT_EQ(e2->param, "seed");
}

// One range for top_p, in the API's and in SamplingParams' words alike.
TEST(OpenAiRequest, TopPHasOneRange) {
    for (const char* v : {"0", "1.5", "-1", "1e-50"}) {
        auto e = parse_extra(Endpoint::kChatCompletions, std::string(R"(,"top_p":)") + v);
        ASSERT_TRUE(e) << v;
        EXPECT_EQ(e->param, "top_p");
        EXPECT_EQ(e->message.rfind("top_p must be in (0, 1], got ", 0), 0u) << e->message;
    }
    EXPECT_FALSE(parse_extra(Endpoint::kChatCompletions, R"(,"top_p":1)"));
    sampling::SamplingParams p;
    p.top_p = 0.0f;
    EXPECT_EQ(p.validate().message(), "top_p must be in (0, 1], got 0");
    p.top_p = 1.5f;
    EXPECT_EQ(p.validate().message(), "top_p must be in (0, 1], got 1.5");
}

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(OpenAiRequest, DeepNestingIsRefusedBeforeParsing) {
    GenerationRequest g;
    auto e = parse_chat(nested_arrays(100000), g);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, "json_too_deep");
    EXPECT_NE(e->message.find("deeper than 64 levels"), std::string::npos);
    // The body object is level 1: an ignored field nesting 63 arrays reaches exactly 64.
    ASSERT_FALSE(parse_chat(chat_with(",\"extra\":" + nested_arrays(kMaxJsonDepth - 1)), g));
    EXPECT_EQ(g.ignored_fields, (std::vector<std::string>{"extra"}));
    auto over = parse_chat(chat_with(",\"extra\":" + nested_arrays(kMaxJsonDepth)), g);
    ASSERT_TRUE(over);
    EXPECT_EQ(over->code, "json_too_deep");
    // Brackets inside strings (escaped quotes included) are text, not nesting.
    const std::string text = "\\\"" + std::string(1000, '[') + std::string(1000, '{');
    ASSERT_FALSE(parse_chat(chat_with(",\"user\":\"" + text + "\""), g));
    EXPECT_EQ(g.user, "\"" + std::string(1000, '[') + std::string(1000, '{'));
}

// n: 1 to kMaxChoices; 0, negatives, beyond the limit and fractions are 400s naming `n`.
TEST(OpenAiRequest, NChoicesWithinTheLimit) {
    for (const char* endpoint_body : {R"({"messages":[{"role":"user","content":"x"}],"n":)", R"({"prompt":"x","n":)"}) {
        const Endpoint endpoint = std::string(endpoint_body).find("prompt") != std::string::npos ? Endpoint::kCompletions
                                                                                                : Endpoint::kChatCompletions;
        GenerationRequest g;
        ASSERT_FALSE(parse_generation_request(endpoint, std::string(endpoint_body) + "4}", g));
        EXPECT_EQ(g.n, 4);
        ASSERT_FALSE(parse_generation_request(endpoint, std::string(endpoint_body) + "16}", g));
        EXPECT_EQ(g.n, kMaxChoices);
        for (const char* bad : {"0", "17", "-1", "1000", "1.5", "\"2\""}) {
            auto e = parse_generation_request(endpoint, std::string(endpoint_body) + bad + "}", g);
            ASSERT_TRUE(e) << bad;
            EXPECT_EQ(e->http_status, 400) << bad;
            EXPECT_EQ(e->param, "n") << bad;
        }
        auto e = parse_generation_request(endpoint, std::string(endpoint_body) + "0}", g);
        EXPECT_EQ(e->message, "n must be an integer in [1, 16], got 0");
    }
    GenerationRequest g;
    ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"x"}]})", g));
    EXPECT_EQ(g.n, 1) << "default";
}

// logit_bias: token ids as decimal string keys, biases in [-100, 100], at most 300 entries; parsed
// sorted by id.
TEST(OpenAiRequest, LogitBiasParsesAndRefusesByName) {
    GenerationRequest g;
    ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"50":-100,"7":2.5,"0":100}})", g));
    ASSERT_EQ(g.sampling.logit_bias.size(), 3u);
    EXPECT_EQ(g.sampling.logit_bias[0].token, 0);
    EXPECT_EQ(g.sampling.logit_bias[0].bias, 100.0f);
    EXPECT_EQ(g.sampling.logit_bias[1].token, 7);
    EXPECT_EQ(g.sampling.logit_bias[1].bias, 2.5f);
    EXPECT_EQ(g.sampling.logit_bias[2].token, 50);
    EXPECT_EQ(g.sampling.logit_bias[2].bias, -100.0f);
    EXPECT_TRUE(g.sampling.validate().ok());
    ASSERT_FALSE(parse_generation_request(Endpoint::kCompletions, R"({"prompt":"x","logit_bias":{"3":1}})", g));
    EXPECT_EQ(g.sampling.logit_bias.size(), 1u);
    ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{}})", g));
    EXPECT_TRUE(g.sampling.logit_bias.empty());

    std::string many = R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{)";
    for (int i = 0; i < 300; ++i) many += (i ? "," : "") + std::string("\"") + std::to_string(i) + "\":1";
    ASSERT_FALSE(parse_chat(many + "}}", g)) << "300 entries: OpenAI's limit";
    EXPECT_EQ(g.sampling.logit_bias.size(), 300u);
    const std::string too_many = many + R"(,"300":1}})";
    const std::pair<std::string, const char*> bad[] = {
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"5":101}})", "in [-100, 100]"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"5":-100.5}})", "in [-100, 100]"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"5":"1"}})", "in [-100, 100]"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"abc":1}})", "token ids"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"-1":1}})", "token ids"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"1.5":1}})", "token ids"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"":1}})", "token ids"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"2147483648":1}})", "token ids"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"1":1,"01":2}})", "twice"},
        {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":[1]})", "must be an object"},
        {too_many, "at most 300 entries, got 301"},
    };
    for (const auto& [body, words] : bad) {
        auto e = parse_chat(body, g);
        ASSERT_TRUE(e) << body.substr(0, 120);
        EXPECT_EQ(e->http_status, 400);
        EXPECT_EQ(e->param, "logit_bias");
        EXPECT_NE(e->message.find(words), std::string::npos) << e->message;
    }
}

}  // namespace
}  // namespace hichat::api
