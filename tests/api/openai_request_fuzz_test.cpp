// Regressions found by fuzz/openai_request_fuzzer: bodies that made parse_generation_request throw
// (a 500 from the server) instead of refusing them with a 400 naming the field.
#include <gtest/gtest.h>

#include "api/openai_request.h"

namespace hichat::api {
namespace {

TEST(OpenAiRequestFuzzRegression, ContentPartWithNonStringTypeIsA400) {
    for (const char* type : {"1", "null", "true", "[]", "{}", "[\"text\"]"}) {
        const std::string body =
            std::string(R"({"messages":[{"role":"user","content":[{"type":)") + type + R"(,"text":"hi"}]}]})";
        GenerationRequest g;
        std::optional<ApiError> e;
        ASSERT_NO_THROW(e = parse_generation_request(Endpoint::kChatCompletions, body, g)) << body;
        ASSERT_TRUE(e) << body;
        EXPECT_EQ(e->http_status, 400) << body;
        EXPECT_EQ(e->param, "messages[0].content[0]") << body;
    }
    GenerationRequest g;
    EXPECT_FALSE(parse_generation_request(Endpoint::kChatCompletions,
                                          R"({"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]})", g));
    EXPECT_EQ(g.messages.at(0).content, "hi");
}

// 100,000 nested arrays around an invalid UTF-8 string (200 KB, well under the body limit): the
// search for the field to name recursed once per level and overflowed the stack (a SIGSEGV of the
// whole server, found with the fuzz target at 10,000 levels). The nesting cap (64 levels, checked
// first) now refuses such a body before the UTF-8 search runs; the search stops at the same depth.
TEST(OpenAiRequestFuzzRegression, DeeplyNestedInvalidUtf8IsA400) {
    const int depth = 100000;
    const std::string body = R"({"messages":[{"role":"user","content":"x"}],"user":)" + std::string(depth, '[') +
                             "\"\xFF\"" + std::string(depth, ']') + "}";
    GenerationRequest g;
    auto e = parse_generation_request(Endpoint::kChatCompletions, body, g);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->http_status, 400);
    EXPECT_NE(e->message.find("deeper than 64 levels"), std::string::npos) << e->message;
    // Shallow nesting still names the field.
    e = parse_generation_request(Endpoint::kChatCompletions,
                                 "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"user\":[[\"\xFF\"]]}", g);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "user[0][0]");
}

}  // namespace
}  // namespace hichat::api
