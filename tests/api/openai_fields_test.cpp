// Every field of the OpenAI request schemas is implemented, an accepted no-op, or refused by name;
// keys outside the schemas are ignored and listed.
#include "api/openai_fields.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/openai_request.h"

namespace hichat::api {
namespace {

std::string body_with(Endpoint endpoint, const std::string& extra) {
    return (endpoint == Endpoint::kChatCompletions ? R"({"messages":[{"role":"user","content":"x"}])"
                                                   : R"({"prompt":"x")") +
           extra + "}";
}

std::optional<ApiError> parse(Endpoint endpoint, const std::string& extra, GenerationRequest& g) {
    return parse_generation_request(endpoint, body_with(endpoint, extra), g);
}

std::optional<ApiError> parse(Endpoint endpoint, const std::string& extra) {
    GenerationRequest g;
    return parse(endpoint, extra, g);
}

void expect_unsupported(const std::optional<ApiError>& e, const std::string& param, const std::string& what) {
    ASSERT_TRUE(e) << what;
    EXPECT_EQ(e->http_status, 400) << what;
    EXPECT_EQ(e->param, param) << what;
    EXPECT_EQ(e->code, "unsupported_field") << what;
    EXPECT_EQ(e->type, "invalid_request_error") << what;
    EXPECT_NE(e->message.find(param + " is not supported by HiChat yet"), std::string::npos) << e->message;
}

// The field names of OpenAI's request schemas (chat completions, legacy completions): each must have a
// rule, so none of them is silently ignored.
const char* const kOpenAiChatFields[] = {
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier", "seed",
    "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options"};
const char* const kOpenAiCompletionFields[] = {
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user"};
const char* const kOpenAiMessageFields[] = {"role",         "content",       "name",    "tool_calls",
                                            "tool_call_id", "function_call", "refusal", "audio"};

bool has_rule(FieldScope scope, std::string_view name) {
    auto rules = field_rules(scope);
    return std::any_of(rules.begin(), rules.end(), [&](const FieldRule& r) { return r.name == name; });
}

TEST(OpenAiFields, EverySchemaFieldHasARule) {
    for (const char* f : kOpenAiChatFields) EXPECT_TRUE(has_rule(FieldScope::kChat, f)) << f;
    for (const char* f : kOpenAiCompletionFields) EXPECT_TRUE(has_rule(FieldScope::kCompletions, f)) << f;
    for (const char* f : kOpenAiMessageFields) EXPECT_TRUE(has_rule(FieldScope::kMessage, f)) << f;
}

struct RuleCase {
    Endpoint endpoint;
    FieldRule rule;
};

std::vector<RuleCase> refused_rules() {
    std::vector<RuleCase> out;
    for (const FieldRule& r : field_rules(FieldScope::kChat)) {
        if (r.use == FieldUse::kRefused) out.push_back({Endpoint::kChatCompletions, r});
    }
    for (const FieldRule& r : field_rules(FieldScope::kCompletions)) {
        if (r.use == FieldUse::kRefused) out.push_back({Endpoint::kCompletions, r});
    }
    return out;
}

class RefusedField : public testing::TestWithParam<RuleCase> {};

// A value that asks for something (no "off" value is a non-empty object) is a 400 naming the field.
TEST_P(RefusedField, IsA400NamingIt) {
    const RuleCase& c = GetParam();
    const std::string name(c.rule.name);
    expect_unsupported(parse(c.endpoint, ",\"" + name + "\":{\"asks\":\"something\"}"), name, name);
    expect_unsupported(parse(c.endpoint, ",\"" + name + "\":true"), name, name + ": true");
    // null asks for nothing, as its absence does.
    EXPECT_FALSE(parse(c.endpoint, ",\"" + name + "\":null")) << name;
}

std::string case_name(const testing::TestParamInfo<RuleCase>& info) {
    return (info.param.endpoint == Endpoint::kChatCompletions ? "chat_" : "completions_") +
           std::string(info.param.rule.name);
}

INSTANTIATE_TEST_SUITE_P(Table, RefusedField, testing::ValuesIn(refused_rules()), case_name);

// The values clients actually send for the features HiChat does not have.
TEST(OpenAiFields, RealisticRequestsForMissingFeaturesAreRefused) {
    const std::pair<const char*, const char*> chat[] = {
        {"functions", R"([{"name":"f"}])"},
        {"function_call", R"({"name":"f"})"},
        {"modalities", R"(["text","audio"])"},
        {"audio", R"({"voice":"alloy","format":"wav"})"},
        {"prediction", R"({"type":"content","content":"x"})"},
        {"reasoning_effort", R"("low")"},
        {"verbosity", R"("medium")"},
        {"web_search_options", "{}"},
        {"service_tier", R"("flex")"},
        {"store", "true"},
    };
    for (const auto& [name, value] : chat) {
        expect_unsupported(parse(Endpoint::kChatCompletions, std::string(",\"") + name + "\":" + value), name,
                           std::string(name) + "=" + value);
    }
    const std::pair<const char*, const char*> completions[] = {
        {"best_of", "2"},
        {"suffix", R"("tail")"},
    };
    for (const auto& [name, value] : completions) {
        expect_unsupported(parse(Endpoint::kCompletions, std::string(",\"") + name + "\":" + value), name,
                           std::string(name) + "=" + value);
    }
    // echo is implemented on completions: max_tokens may then be 0 (the prompt alone), never without it.
    GenerationRequest echo;
    EXPECT_FALSE(parse(Endpoint::kCompletions, R"(,"echo":true,"max_tokens":0)", echo));
    EXPECT_TRUE(echo.echo);
    EXPECT_EQ(echo.max_tokens, 0);
    auto no_echo = parse(Endpoint::kCompletions, R"(,"max_tokens":0)");
    ASSERT_TRUE(no_echo);
    EXPECT_EQ(no_echo->param, "max_tokens");
    auto bad_echo = parse(Endpoint::kCompletions, R"(,"echo":"yes")");
    ASSERT_TRUE(bad_echo);
    EXPECT_EQ(bad_echo->param, "echo");
    auto fractional_n = parse(Endpoint::kCompletions, R"(,"n":1.5)");
    ASSERT_TRUE(fractional_n);
    EXPECT_EQ(fractional_n->message, "n must be an integer, got 1.5");
    expect_unsupported(parse(Endpoint::kChatCompletions, R"(,"stream_options":{"include_obfuscation":true})"),
                       "stream_options.include_obfuscation", "include_obfuscation");
}

// Values that ask for nothing HiChat does differently are accepted, and so are the no-op fields.
TEST(OpenAiFields, OffValuesAndNoOpFieldsAreAccepted) {
    const char* chat =
        R"(,"logprobs":false,"top_logprobs":0,"tools":[],"tool_choice":"none","functions":[],)"
        R"("function_call":"auto","logit_bias":{},"response_format":{"type":"text"},"modalities":["text"],)"
        R"("store":false,"service_tier":"auto","n":1,"user":"u","metadata":{"k":"v"},"safety_identifier":"s",)"
        R"("prompt_cache_key":"c","parallel_tool_calls":true,"stream_options":{"include_obfuscation":false},)"
        R"("audio":null,"prediction":null,"verbosity":null,"reasoning_effort":null,"web_search_options":null)";
    GenerationRequest g;
    auto e = parse(Endpoint::kChatCompletions, chat, g);
    EXPECT_FALSE(e) << e->param << ": " << e->message;
    EXPECT_TRUE(g.ignored_fields.empty());
    auto e2 = parse(Endpoint::kCompletions, R"(,"echo":false,"best_of":1,"suffix":"","logit_bias":{},"n":1,"user":"u")",
                    g);
    EXPECT_FALSE(e2) << e2->param << ": " << e2->message;
    EXPECT_FALSE(parse(Endpoint::kChatCompletions, R"(,"tool_choice":"auto","tools":[])"));
}

TEST(OpenAiFields, NoOpFieldsAreTypeChecked) {
    const std::pair<const char*, const char*> cases[] = {
        {"user", "5"}, {"metadata", "[]"}, {"safety_identifier", "{}"},
        {"prompt_cache_key", "1"}, {"parallel_tool_calls", R"("yes")"},
    };
    for (const auto& [name, value] : cases) {
        auto e = parse(Endpoint::kChatCompletions, std::string(",\"") + name + "\":" + value);
        ASSERT_TRUE(e) << name;
        EXPECT_EQ(e->param, name);
        EXPECT_NE(e->message.find(std::string(name) + " must be "), std::string::npos) << e->message;
    }
}

TEST(OpenAiFields, MessageFieldsHiChatDoesNotImplementAreRefused) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"role":"user","content":"x","name":"bob"})", "messages[0].name"},
        {R"({"role":"assistant","content":"x","refusal":"no"})", "messages[0].refusal"},
        {R"({"role":"assistant","content":"x","audio":{"id":"a"}})", "messages[0].audio"},
        {R"({"role":"assistant","content":"x","function_call":{"name":"f","arguments":"{}"}})",
         "messages[0].function_call"},
        {R"({"role":"function","content":"42","name":"f"})", "messages[0].role"},
        {R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]})",
         "messages[0].content[1]"},
        {R"({"role":"user","content":[{"type":"input_audio","input_audio":{"data":"","format":"wav"}}]})",
         "messages[0].content[0]"},
        {R"({"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]})", "messages[0].content[0]"},
        {R"({"role":"assistant","content":[{"type":"refusal","refusal":"no"}]})", "messages[0].content[0]"},
    };
    for (const auto& [message, param] : cases) {
        GenerationRequest g;
        auto e = parse_generation_request(Endpoint::kChatCompletions,
                                          std::string(R"({"messages":[)") + message + "]}", g);
        ASSERT_TRUE(e) << message;
        EXPECT_EQ(e->param, param) << message;
        EXPECT_EQ(e->code, "unsupported_field") << message;
        EXPECT_NE(e->message.find("not support"), std::string::npos) << e->message;
    }
}

// What the SDKs send back in a replayed assistant message asks for nothing and is accepted.
TEST(OpenAiFields, ReplayedAssistantMessagesAreAccepted) {
    GenerationRequest g;
    auto e = parse_generation_request(Endpoint::kChatCompletions, R"({"messages":[{"role":"user","content":"q"},
        {"role":"assistant","content":"a","refusal":null,"tool_calls":[],"audio":null,"function_call":null,
         "name":"","annotations":[]},{"role":"user","content":"q2"}]})",
                                      g);
    ASSERT_FALSE(e) << e->param << ": " << e->message;
    ASSERT_EQ(g.messages.size(), 3u);
    EXPECT_EQ(g.messages[1].content, "a");
    EXPECT_EQ(g.ignored_fields, (std::vector<std::string>{"messages[1].annotations"}));
}

TEST(OpenAiFields, KeysOutsideTheSchemaAreIgnoredAndListed) {
    GenerationRequest g;
    auto e = parse_generation_request(Endpoint::kChatCompletions, R"({"zeta":1,"guided_json":{},
        "messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}],
        "reasoning_content":"r"}],"stream_options":{"include_usage":true,"extra":1},"temperature":0})",
                                      g);
    ASSERT_FALSE(e) << e->param << ": " << e->message;
    EXPECT_EQ(g.messages[0].content, "hi");
    EXPECT_TRUE(g.include_usage);
    std::vector<std::string> ignored = g.ignored_fields;
    std::sort(ignored.begin(), ignored.end());
    EXPECT_EQ(ignored, (std::vector<std::string>{"guided_json", "messages[0].content[0].cache_control",
                                                 "messages[0].reasoning_content", "stream_options.extra", "zeta"}));
    // A chat field sent to completions is outside that schema (response_format is taken there, as vLLM does).
    ASSERT_FALSE(parse(Endpoint::kCompletions, R"(,"messages":[],"response_format":{"type":"json_object"})", g));
    EXPECT_EQ(g.ignored_fields, (std::vector<std::string>{"messages"}));
    ASSERT_TRUE(g.grammar);
    EXPECT_EQ(g.grammar->kind, grammar::GrammarKind::kJsonObject);
}

}  // namespace
}  // namespace hichat::api
