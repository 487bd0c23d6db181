// The Responses and Conversations bodies: what is parsed, and every refusal names its field.
#include "api/responses_request.h"

#include <gtest/gtest.h>

#include "api/openai_fields.h"

namespace hichat::api {
namespace {

std::optional<ApiError> parse(const std::string& body, ResponsesRequest& out) { return parse_responses_request(body, out); }

ApiError refusal(const std::string& body) {
    ResponsesRequest r;
    auto e = parse(body, r);
    EXPECT_TRUE(e.has_value()) << body;
    return e.value_or(ApiError{});
}

TEST(ResponsesRequest, StringInputIsOneUserMessage) {
    ResponsesRequest r;
    ASSERT_FALSE(parse(R"({"input": "hi", "model": "m"})", r));
    ASSERT_EQ(r.input.size(), 1u);
    EXPECT_EQ(r.input[0].role, "user");
    EXPECT_EQ(r.input[0].text, "hi");
    EXPECT_TRUE(r.store);
    EXPECT_FALSE(r.stream);
    EXPECT_FALSE(r.truncation_auto);
    EXPECT_FALSE(r.instructions.has_value());
}

TEST(ResponsesRequest, ItemsWithPartsAndEveryImplementedField) {
    ResponsesRequest r;
    ASSERT_FALSE(parse(R"({"input": [
        {"role": "developer", "content": "be kind"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "c", "annotations": []}]}],
      "instructions": "sys", "store": false, "stream": true, "truncation": "auto", "max_output_tokens": 7,
      "temperature": 0.5, "top_p": 0.9, "metadata": {"k": "v"}, "user": "u", "previous_response_id": "resp_abc",
      "text": {"format": {"type": "text"}}, "tools": [], "background": false, "include": []})", r));
    ASSERT_EQ(r.input.size(), 3u);
    EXPECT_EQ(r.input[0].role, "developer");
    EXPECT_EQ(to_chat_message(r.input[0]).role, "system");
    EXPECT_EQ(r.input[1].text, "ab");
    EXPECT_EQ(r.input[2].role, "assistant");
    EXPECT_EQ(r.instructions, "sys");
    EXPECT_FALSE(r.store);
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.truncation_auto);
    EXPECT_EQ(r.max_output_tokens, 7);
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
    EXPECT_EQ(r.metadata["k"], "v");
    EXPECT_EQ(r.previous_response_id, "resp_abc");
}

TEST(ResponsesRequest, ConversationAsIdOrObject) {
    ResponsesRequest r;
    ASSERT_FALSE(parse(R"({"input": "x", "conversation": "conv_1"})", r));
    EXPECT_EQ(r.conversation_id, "conv_1");
    ASSERT_FALSE(parse(R"({"input": "x", "conversation": {"id": "conv_2"}})", r));
    EXPECT_EQ(r.conversation_id, "conv_2");
    EXPECT_EQ(refusal(R"({"input": "x", "conversation": {"id": "resp_2"}})").param, "conversation.id");
    EXPECT_EQ(refusal(R"({"input": "x", "conversation": 5})").param, "conversation");
}

TEST(ResponsesRequest, RefusalsNameTheField) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({})", "input"},
        {R"({"input": []})", "input"},
        {R"({"input": 3})", "input"},
        {R"({"input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
        {R"({"input": [{"role": "user"}]})", "input[0].content"},
        {R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})", "input[0].content[0].text"},
        {R"({"input": [{"role": "user", "content": [{"type": "bogus", "text": "x"}]}]})", "input[0].content[0].type"},
        {R"({"input": "x", "previous_response_id": "abc"})", "previous_response_id"},
        {R"({"input": "x", "previous_response_id": "resp_a b"})", "previous_response_id"},
        {R"({"input": "x", "previous_response_id": 5})", "previous_response_id"},
        {R"({"input": "x", "previous_response_id": "resp_a", "conversation": "conv_b"})", "conversation"},
        {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
        {R"({"input": "x", "max_output_tokens": 1.5})", "max_output_tokens"},
        {R"({"input": "x", "temperature": 3})", "temperature"},
        {R"({"input": "x", "top_p": 0})", "top_p"},
        {R"({"input": "x", "store": "yes"})", "store"},
        {R"({"input": "x", "truncation": "sometimes"})", "truncation"},
        {R"({"input": "x", "instructions": 5})", "instructions"},
        {R"({"input": "x", "metadata": {"k": 5}})", "metadata.k"},
        {R"({"input": "x", "user": 5})", "user"},
        {R"({"input": "x", "background": "yes"})", "background"},
        {R"({"input": "x", "background": true, "store": false})", "background"},
    };
    for (const auto& [body, param] : cases) {
        const ApiError e = refusal(body);
        EXPECT_EQ(e.http_status, 400) << body;
        EXPECT_EQ(e.param, param) << body << ": " << e.message;
        EXPECT_NE(e.message.find(param), std::string::npos) << e.message;
    }
}

TEST(ResponsesRequest, UnimplementedFeaturesAreRefusedByName) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"input": "x", "tools": [{"type": "function"}]})", "tools"},
        {R"({"input": "x", "tool_choice": "required"})", "tool_choice"},
        {R"({"input": "x", "reasoning": {"effort": "low"}})", "reasoning"},
        {R"({"input": "x", "background": true, "stream": true})", "background"},
        {R"({"input": "x", "include": ["message.output_text.logprobs"]})", "include"},
        {R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", "text.format"},
        {R"({"input": "x", "text": {"verbosity": "low"}})", "text.verbosity"},
        {R"({"input": "x", "top_logprobs": 2})", "top_logprobs"},
        {R"({"input": [{"type": "function_call", "name": "f"}]})", "input[0].type"},
        {R"({"input": [{"type": "item_reference", "id": "msg_1"}]})", "input[0].type"},
        {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})",
         "input[0].content[0].type"},
    };
    for (const auto& [body, param] : cases) {
        const ApiError e = refusal(body);
        EXPECT_EQ(e.code, "unsupported_field") << body;
        EXPECT_EQ(e.param, param) << body << ": " << e.message;
    }
}

TEST(ResponsesRequest, BackgroundNeedsStoreAndNoStream) {
    ResponsesRequest r;
    ASSERT_FALSE(parse_responses_request(R"({"input": "x", "background": true})", r));
    EXPECT_TRUE(r.background);
    EXPECT_TRUE(r.store) << "store defaults to true";
    ASSERT_FALSE(parse_responses_request(R"({"input": "x", "background": true, "store": true, "stream": false})", r));
    EXPECT_TRUE(r.background);
    ASSERT_FALSE(parse_responses_request(R"({"input": "x", "background": false, "store": false, "stream": true})", r));
    EXPECT_FALSE(r.background);
    ASSERT_FALSE(parse_responses_request(R"({"input": "x", "background": null})", r));
    EXPECT_FALSE(r.background);
    const ApiError no_store = refusal(R"({"input": "x", "background": true, "store": false})");
    EXPECT_NE(no_store.message.find("store"), std::string::npos) << no_store.message;
    const ApiError streamed = refusal(R"({"input": "x", "background": true, "stream": true})");
    EXPECT_EQ(streamed.code, "unsupported_field");
    EXPECT_NE(streamed.message.find("stream"), std::string::npos) << streamed.message;
}

TEST(ResponsesRequest, EveryResponsesFieldHasARule) {
    // The schema's top-level fields (2025); each must be implemented, a no-op or refused, never ignored.
    for (const char* name : {"background", "conversation", "include", "input", "instructions", "max_output_tokens",
                             "max_tool_calls", "metadata", "model", "parallel_tool_calls", "previous_response_id",
                             "prompt", "prompt_cache_key", "reasoning", "safety_identifier", "service_tier", "store",
                             "stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs",
                             "top_p", "truncation", "user"}) {
        const auto rules = field_rules(FieldScope::kResponses);
        EXPECT_TRUE(std::any_of(rules.begin(), rules.end(), [&](const FieldRule& r) { return r.name == name; })) << name;
    }
}

TEST(ConversationRequest, CreateUpdateAndItems) {
    ConversationRequest c;
    ASSERT_FALSE(parse_conversation_request("", false, c));  // the SDK's create() with no body
    ASSERT_FALSE(parse_conversation_request(R"({"metadata": {"a": "b"}, "items": [{"role": "user", "content": "hi"}]})",
                                            false, c));
    EXPECT_EQ((*c.metadata)["a"], "b");
    ASSERT_EQ(c.items.size(), 1u);
    ConversationRequest u;
    auto e = parse_conversation_request(R"({})", true, u);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "metadata");

    std::string many_pairs = R"({"metadata": {)";
    for (int i = 0; i < 17; ++i) many_pairs += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\": \"v\"";
    many_pairs += "}}";
    ConversationRequest m;
    e = parse_conversation_request(many_pairs, false, m);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "metadata");
    e = parse_conversation_request(R"({"metadata": {")" + std::string(65, 'k') + R"(": "v"}})", false, m);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "metadata");

    std::string items = R"({"items": [)";
    for (int i = 0; i < 21; ++i) items += (i ? "," : "") + std::string(R"({"role": "user", "content": "x"})");
    items += "]}";
    e = parse_conversation_request(items, false, m);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "items");
    std::vector<InputMessage> out;
    e = parse_items_request(R"({"items": []})", out);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "items");
}

TEST(ListQuery, ParsesAndNamesBadParameters) {
    ListQuery q;
    ASSERT_FALSE(parse_list_query("after=msg_1&limit=5&order=asc", q));
    EXPECT_EQ(q.after, "msg_1");
    EXPECT_EQ(q.limit, 5);
    EXPECT_TRUE(q.ascending);
    ListQuery d;
    ASSERT_FALSE(parse_list_query("", d));
    EXPECT_EQ(d.limit, 20);
    EXPECT_FALSE(d.ascending);
    EXPECT_EQ(parse_list_query("limit=0", d)->param, "limit");
    EXPECT_EQ(parse_list_query("limit=101", d)->param, "limit");
    EXPECT_EQ(parse_list_query("limit=x", d)->param, "limit");
    EXPECT_EQ(parse_list_query("order=up", d)->param, "order");
}

TEST(ObjectIds, FormatAndFreshness) {
    const std::string a = new_object_id("resp"), b = new_object_id("resp");
    EXPECT_NE(a, b);
    EXPECT_TRUE(is_valid_object_id(a, "resp"));
    EXPECT_FALSE(is_valid_object_id(a, "conv"));
    EXPECT_FALSE(is_valid_object_id("resp_", "resp"));
    EXPECT_FALSE(is_valid_object_id("resp_../x", "resp"));
    EXPECT_FALSE(is_valid_object_id("respx", "resp"));
}

}  // namespace
}  // namespace hichat::api
