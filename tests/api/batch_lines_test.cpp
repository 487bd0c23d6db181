// The Batch API's JSONL input read line by line (a bad line refused on its own, the rest kept in
// order with their keys' order and the batch priority) and the output / error lines' OpenAI form.
#include "api/batch_lines.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

using Json = nlohmann::json;

std::string chat_line(const std::string& custom_id, const std::string& extra_body = "") {
    return R"({"custom_id":")" + custom_id + R"(","method":"POST","url":"/v1/chat/completions","body":{"model":"tiny",)" +
           extra_body + R"("messages":[{"role":"user","content":"hi"}],"max_tokens":3}})";
}

TEST(BatchLines, EndpointsAreTheTwoGenerationEndpoints) {
    EXPECT_EQ(batch_endpoint("/v1/chat/completions"), Endpoint::kChatCompletions);
    EXPECT_EQ(batch_endpoint("/v1/completions"), Endpoint::kCompletions);
    EXPECT_EQ(batch_endpoint("/v1/embeddings"), std::nullopt);
    EXPECT_EQ(batch_endpoint("/v1/responses"), std::nullopt);
    EXPECT_EQ(endpoint_path(Endpoint::kCompletions), "/v1/completions");
}

TEST(BatchLines, ValidLinesKeepOrderKeysAndGetTheBatchPriority) {
    const std::string jsonl = chat_line("a", R"("zeta":1,"alpha":2,"priority":-5,)") + "\r\n\n   \n" + chat_line("b") + "\n";
    BatchInput in = parse_batch_input(jsonl, Endpoint::kChatCompletions);
    EXPECT_EQ(in.num_lines, 2);
    EXPECT_TRUE(in.refused.empty());
    ASSERT_EQ(in.requests.size(), 2u);
    EXPECT_EQ(in.requests[0].line, 0);
    EXPECT_EQ(in.requests[0].custom_id, "a");
    EXPECT_EQ(in.requests[1].line, 1);  // blank lines are not counted
    EXPECT_EQ(in.requests[1].custom_id, "b");
    const std::string& body = in.requests[0].body;
    EXPECT_LT(body.find("\"zeta\""), body.find("\"alpha\"")) << body;  // the client's key order
    Json parsed = Json::parse(body);
    EXPECT_EQ(parsed["priority"], kBatchLinePriority);  // the client's own priority is replaced
    EXPECT_EQ(parsed["max_tokens"], 3);
    EXPECT_FALSE(parsed.contains("custom_id"));
}

TEST(BatchLines, EachBadLineIsRefusedAloneNamingItsLineAndTheRestRun) {
    const std::string jsonl =
        chat_line("ok1") + "\n" +
        "not json at all\n" +
        R"({"method":"POST","url":"/v1/chat/completions","body":{}})" + "\n" +
        chat_line("ok1") + "\n" +
        R"({"custom_id":"m","method":"GET","url":"/v1/chat/completions","body":{}})" + "\n" +
        R"({"custom_id":"u","method":"POST","url":"/v1/completions","body":{}})" + "\n" +
        R"({"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":[1]})" + "\n" +
        R"({"custom_id":"s","method":"POST","url":"/v1/chat/completions","body":{"stream":true}})" + "\n" +
        "[1,2]\n" +
        chat_line("ok2");  // no final newline
    BatchInput in = parse_batch_input(jsonl, Endpoint::kChatCompletions);
    EXPECT_EQ(in.num_lines, 10);
    ASSERT_EQ(in.requests.size(), 2u);
    EXPECT_EQ(in.requests[0].custom_id, "ok1");
    EXPECT_EQ(in.requests[1].custom_id, "ok2");
    EXPECT_EQ(in.requests[1].line, 9);
    ASSERT_EQ(in.refused.size(), 8u);
    const std::vector<std::string> codes = {"invalid_json", "invalid_custom_id", "duplicate_custom_id", "invalid_method",
                                            "invalid_url",  "invalid_body",      "unsupported_stream",  "invalid_json"};
    for (size_t i = 0; i < codes.size(); ++i) EXPECT_EQ(in.refused[i].code, codes[i]) << i;
    EXPECT_EQ(in.refused[0].line, 1);
    EXPECT_EQ(in.refused[0].custom_id, std::nullopt);
    EXPECT_NE(in.refused[0].message.find("line 2"), std::string::npos) << in.refused[0].message;
    EXPECT_NE(in.refused[0].message.find("the line is not valid JSON"), std::string::npos) << in.refused[0].message;
    EXPECT_EQ(in.refused[2].custom_id, "ok1");
    EXPECT_NE(in.refused[4].message.find("/v1/chat/completions"), std::string::npos);
    EXPECT_NE(in.refused[7].message.find("line 9"), std::string::npos);
}

TEST(BatchLines, EmptyInputHasNoLines) {
    BatchInput in = parse_batch_input("\n\r\n  \n", Endpoint::kCompletions);
    EXPECT_EQ(in.num_lines, 0);
    EXPECT_TRUE(in.requests.empty());
    EXPECT_TRUE(in.refused.empty());
}

TEST(BatchLines, AnsweredAndRefusedLinesHaveOpenAisShape) {
    Json ok = Json::parse(answered_line("c1", 200, R"({"id":"chatcmpl-1","object":"chat.completion"})"));
    EXPECT_TRUE(ok["id"].get<std::string>().starts_with("batch_req_"));
    EXPECT_EQ(ok["custom_id"], "c1");
    EXPECT_EQ(ok["response"]["status_code"], 200);
    EXPECT_EQ(ok["response"]["request_id"], "chatcmpl-1");
    EXPECT_EQ(ok["response"]["body"]["object"], "chat.completion");
    EXPECT_TRUE(ok["error"].is_null());

    Json failed = Json::parse(answered_line("c2", 400, R"({"error":{"message":"bad","param":"max_tokens"}})"));
    EXPECT_EQ(failed["response"]["status_code"], 400);
    EXPECT_EQ(failed["response"]["request_id"], failed["id"]);
    EXPECT_EQ(failed["response"]["body"]["error"]["param"], "max_tokens");

    Json refused = Json::parse(refused_line(std::nullopt, "invalid_json", "line 2: bad"));
    EXPECT_TRUE(refused["custom_id"].is_null());
    EXPECT_TRUE(refused["response"].is_null());
    EXPECT_EQ(refused["error"]["code"], "invalid_json");
    EXPECT_EQ(refused["error"]["message"], "line 2: bad");
    EXPECT_NE(refused["id"], ok["id"]);
}

}  // namespace
}  // namespace hichat::api
