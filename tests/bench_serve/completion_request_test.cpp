// The request body and HTTP bytes the generator sends, and its seeded random prompts.
#include "bench/completion_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hichat::tools::bench {
namespace {

TEST(CompletionRequest, BodyAsksForAStreamOfExactlyNTokens) {
    const auto j =
        nlohmann::json::parse(completion_body({.model = "tiny", .num_output_tokens = 8}, {5, 6, 7}));
    EXPECT_EQ(j["model"], "tiny");
    EXPECT_EQ(j["prompt"], nlohmann::json::array({5, 6, 7}));
    EXPECT_EQ(j["max_tokens"], 8);
    EXPECT_EQ(j["temperature"], 0);
    EXPECT_EQ(j["ignore_eos"], true);
    EXPECT_EQ(j["stream"], true);
    EXPECT_EQ(j["stream_options"]["include_usage"], true);
}

TEST(CompletionRequest, TextPromptBody) {
    const auto j = nlohmann::json::parse(
        completion_text_body({.model = "tiny", .num_output_tokens = 3}, " the history\n"));
    EXPECT_EQ(j["prompt"], " the history\n");
    EXPECT_EQ(j["max_tokens"], 3);
    EXPECT_EQ(j["ignore_eos"], true);
    EXPECT_EQ(j["stream"], true);
}

TEST(CompletionRequest, HttpBytes) {
    const HttpTarget t{.host = "h", .port = "1", .path = "/v1/completions", .host_header = "h:1"};
    const std::string body = "{}";
    const std::string wire = http_post(t, "sk-1", body);
    EXPECT_EQ(wire.rfind("POST /v1/completions HTTP/1.1\r\nHost: h:1\r\n", 0), 0u);
    EXPECT_NE(wire.find("\r\nAuthorization: Bearer sk-1\r\n"), std::string::npos);
    EXPECT_NE(wire.find("\r\nContent-Length: 2\r\n\r\n{}"), std::string::npos);
    EXPECT_EQ(http_post(t, "", body).find("Authorization"), std::string::npos);
}

TEST(CompletionRequest, RandomPromptsAreSeededAndInRange) {
    const auto a = random_prompts(20, 32, 256, 1);
    ASSERT_EQ(a.size(), 20u);
    bool any_distinct = false;
    for (const auto& p : a) {
        ASSERT_EQ(p.size(), 32u);
        for (int32_t id : p) {
            EXPECT_GE(id, 0);
            EXPECT_LT(id, 256);
        }
        any_distinct = any_distinct || p != a[0];
    }
    EXPECT_TRUE(any_distinct);
    EXPECT_EQ(a, random_prompts(20, 32, 256, 1));
    EXPECT_NE(a, random_prompts(20, 32, 256, 2));
}

}  // namespace
}  // namespace hichat::tools::bench
