// Tool calling: the formats of the real chat templates, the split of replies into content and calls
// (streamed in any pieces or whole), the call grammars of tool_choice "required" and named functions,
// and the request fields (tools, tool_choice, tool messages) with their errors.
#include "api/tool_calls.h"

#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/openai_request.h"
#include "api/prompt_builder.h"
#include "grammar/schema_test_support.h"
#include "tokenizer/template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

std::string template_of(const std::string& dir) {
    std::ifstream in(dir + "/tokenizer_config.json");
    EXPECT_TRUE(in.good()) << dir << ": run npm ci --prefix tests/node";
    const Json config = Json::parse(in, nullptr, false);
    return config.is_object() ? config.value("chat_template", "") : "";
}

struct Split {
    std::string content;
    std::vector<ToolCall> calls;
    int num_argument_pieces = 0;
};

// The parts joined as the sink joins them; a piece of arguments only follows its call's start.
Split split(ToolCallStream& s, const std::vector<std::string>& pieces) {
    Split out;
    auto take = [&](std::vector<ReplyPart> parts) {
        for (ReplyPart& p : parts) {
            switch (p.kind) {
                case ReplyPart::Kind::kContent: out.content += p.text; break;
                case ReplyPart::Kind::kCallStart:
                    EXPECT_EQ(p.call_index, static_cast<int>(out.calls.size()));
                    out.calls.push_back({.id = p.id, .name = p.name, .arguments = ""});
                    break;
                case ReplyPart::Kind::kArguments:
                    EXPECT_EQ(p.call_index + 1, static_cast<int>(out.calls.size())) << "arguments of the last call";
                    out.calls.back().arguments += p.text;
                    ++out.num_argument_pieces;
                    break;
            }
        }
    };
    for (const std::string& piece : pieces) take(s.push(piece));
    take(s.finish());
    return out;
}

std::vector<std::string> bytes_of(const std::string& text) {
    std::vector<std::string> out;
    for (char c : text) out.emplace_back(1, c);
    return out;
}

const std::vector<std::string> kNames = {"get_weather", "get_time"};

TEST(ToolFormat, DetectedFromTheRealTemplates) {
    EXPECT_EQ(detect_tool_format(template_of(HICHAT_QWEN25_TOKENIZER_DIR)), ToolFormat::kHermes);
    EXPECT_EQ(detect_tool_format(template_of(HICHAT_LLAMA3_TOKENIZER_DIR)), ToolFormat::kLlama3);
    EXPECT_EQ(detect_tool_format(template_of(HICHAT_DEFAULT_MODEL_DIR)), ToolFormat::kNone);
    EXPECT_EQ(detect_tool_format("{%- if tools %}[AVAILABLE_TOOLS]{% endif %}[TOOL_CALLS] {{ calls }}"), ToolFormat::kMistral);
}

TEST(ToolCallStream, HermesCallsAreSplitFromContentInAnyPieces) {
    const std::string reply =
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
        "</tool_call>\n<tool_call>\n{\"name\":\"get_time\",\"arguments\":{}}\n</tool_call>";
    for (const auto& pieces : {std::vector<std::string>{reply}, bytes_of(reply)}) {
        ToolCallStream s(ToolFormat::kHermes, kNames, true, 1);
        const Split out = split(s, pieces);
        EXPECT_EQ(out.content, "Let me check.\n");
        ASSERT_EQ(out.calls.size(), 2u);
        EXPECT_EQ(out.calls[0].name, "get_weather");
        EXPECT_EQ(out.calls[0].arguments, R"({"city":"Paris","days":2})");  // key order kept
        EXPECT_EQ(out.calls[1].name, "get_time");
        EXPECT_EQ(out.calls[1].arguments, "{}");
        EXPECT_EQ(out.calls[0].id.rfind("call_", 0), 0u);
        EXPECT_EQ(out.calls[0].id.size(), 29u);
        EXPECT_NE(out.calls[0].id, out.calls[1].id);
        EXPECT_EQ(s.num_calls(), 2);
    }
}

// Space right after a call is the format's and dropped unless content follows; space after content
// that follows a call is content, in whatever pieces it comes (tool_call_fuzzer found the trailing
// space of "x " kept whole but dropped when it came as its own piece).
TEST(ToolCallStream, SpaceAfterContentAfterACallIsKeptInAnyPieces) {
    const std::string reply = "<tool_call>\n{\"name\":\"get_time\",\"arguments\":{}}\n</tool_call>\n\nDone. ";
    for (const auto& pieces : {std::vector<std::string>{reply}, bytes_of(reply)}) {
        ToolCallStream s(ToolFormat::kHermes, kNames, true, 1);
        const Split out = split(s, pieces);
        ASSERT_EQ(out.calls.size(), 1u);
        EXPECT_EQ(out.content, "\n\nDone. ");
    }
    for (const auto& pieces : {std::vector<std::string>{reply.substr(0, reply.size() - 6)}, bytes_of(reply.substr(0, reply.size() - 6))}) {
        ToolCallStream s(ToolFormat::kHermes, kNames, true, 1);
        EXPECT_EQ(split(s, pieces).content, "");   // only the space after the call
    }
}

TEST(ToolCallStream, HermesHoldsOnlyWhatMayBeginATag) {
    ToolCallStream s(ToolFormat::kHermes, kNames, true, 1);
    auto parts = s.push("a < b <tool");
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].text, "a < b ");
    parts = s.push("box>");
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].text, "<toolbox>");
    EXPECT_TRUE(s.finish().empty());
}

TEST(ToolCallStream, WhatIsNotAValidCallStaysContent) {
    const std::string unknown = "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>";
    ToolCallStream a(ToolFormat::kHermes, kNames, true, 1);
    Split out = split(a, {unknown});
    EXPECT_TRUE(out.calls.empty());
    EXPECT_EQ(out.content, unknown);
    // Not whole JSON and not in the head-first shape: content.
    const std::string broken = "<tool_call>\n{\"arguments\": {}, \"name\": \"get_time\"";
    ToolCallStream b(ToolFormat::kHermes, kNames, true, 1);
    out = split(b, bytes_of(broken));
    EXPECT_TRUE(out.calls.empty());
    EXPECT_EQ(out.content, broken);
    // The head-first shape is a call from its head on: cut short, it has the arguments generated.
    ToolCallStream cut(ToolFormat::kHermes, kNames, true, 1);
    out = split(cut, bytes_of("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"));
    ASSERT_EQ(out.calls.size(), 1u);
    EXPECT_EQ(out.calls[0].arguments, R"({"city":"Par)");
    EXPECT_EQ(out.content, "");
    // A call left open at the end of the reply but whole as JSON is taken.
    ToolCallStream c(ToolFormat::kHermes, kNames, true, 1);
    out = split(c, {"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}"});
    ASSERT_EQ(out.calls.size(), 1u);
    EXPECT_EQ(out.content, "");
}

TEST(ToolCallStream, ParallelFalseKeepsTheFirstCall) {
    ToolCallStream s(ToolFormat::kHermes, kNames, /*parallel=*/false, 1);
    const Split out = split(s, {"<tool_call>\n{\"name\":\"get_time\",\"arguments\":{}}\n</tool_call>\n"
                                "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}\n</tool_call>"});
    ASSERT_EQ(out.calls.size(), 1u);
    EXPECT_EQ(out.calls[0].name, "get_time");
}

TEST(ToolCallStream, Llama3ReplyIsOneCallOrContent) {
    const std::string call = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}";
    for (const auto& pieces : {std::vector<std::string>{call}, bytes_of(call)}) {
        ToolCallStream s(ToolFormat::kLlama3, kNames, true, 1);
        const Split out = split(s, pieces);
        ASSERT_EQ(out.calls.size(), 1u);
        EXPECT_EQ(out.calls[0].arguments, R"({"city":"Oslo"})");
        EXPECT_EQ(out.content, "");
    }
    ToolCallStream text(ToolFormat::kLlama3, kNames, true, 1);
    auto parts = text.push("Hello");
    ASSERT_EQ(parts.size(), 1u);  // content is not held
    EXPECT_EQ(parts[0].text, "Hello");
    EXPECT_EQ(split(text, {" {world}"}).content, " {world}");
}

TEST(ToolCallStream, MistralCallsAreAnArray) {
    ToolCallStream s(ToolFormat::kMistral, kNames, true, 1);
    const Split out = split(s, bytes_of(R"( [{"name": "get_weather", "arguments": {"city": "Rome"}}, {"name": "get_time", "arguments": {}}])"));
    ASSERT_EQ(out.calls.size(), 2u);
    EXPECT_EQ(out.calls[1].name, "get_time");
    EXPECT_EQ(out.calls[0].id.size(), 9u);  // Mistral's templates want 9 letters and digits
    for (char c : out.calls[0].id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << out.calls[0].id;
}

// Arguments go out as they are generated: byte by byte, many pieces, joined the same as whole; the
// whitespace between JSON tokens is dropped (not inside strings); a Hermes closing tag split over
// pieces never leaks into them; other key orders are judged whole.
TEST(ToolCallStream, ArgumentsStreamPieceByPiece) {
    const std::string reply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"New York\", "
                              "\"days\": [1, 2], \"x\": {\"q\": \"a\\\" }\"}}}\n</tool_call>";
    ToolCallStream whole(ToolFormat::kHermes, kNames, true, 1), bytes(ToolFormat::kHermes, kNames, true, 1);
    const Split a = split(whole, {reply}), b = split(bytes, bytes_of(reply));
    ASSERT_EQ(a.calls.size(), 1u);
    ASSERT_EQ(b.calls.size(), 1u);
    EXPECT_EQ(a.calls[0].arguments, R"({"city":"New York","days":[1,2],"x":{"q":"a\" }"}})");
    EXPECT_EQ(b.calls[0].arguments, a.calls[0].arguments);
    EXPECT_EQ(b.calls[0].id, a.calls[0].id);
    EXPECT_EQ(a.num_argument_pieces, 1);
    EXPECT_GT(b.num_argument_pieces, 20) << "streamed as generated";
    EXPECT_EQ(b.content, "");

    // The arguments' start goes out before they are complete.
    ToolCallStream s(ToolFormat::kHermes, kNames, true, 1);
    auto parts = s.push("<tool_call>{\"name\":\"get_time\",\"arguments\":{\"tz\":");
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].kind, ReplyPart::Kind::kCallStart);
    EXPECT_EQ(parts[0].name, "get_time");
    EXPECT_EQ(parts[1].kind, ReplyPart::Kind::kArguments);
    EXPECT_EQ(parts[1].text, R"({"tz":)");
    parts = s.push("\"UTC\"");
    ASSERT_EQ(parts.size(), 1u);
    EXPECT_EQ(parts[0].text, R"("UTC")");

    // Another key order: one piece, once the object is whole.
    ToolCallStream other(ToolFormat::kHermes, kNames, true, 1);
    const Split o = split(other, bytes_of(R"(<tool_call>{"arguments": {"a": 1}, "name": "get_time"}</tool_call>)"));
    ASSERT_EQ(o.calls.size(), 1u);
    EXPECT_EQ(o.calls[0].arguments, R"({"a":1})");
    EXPECT_EQ(o.num_argument_pieces, 1);

    // Mistral and Llama-3 stream the same way.
    ToolCallStream m(ToolFormat::kMistral, kNames, true, 1);
    const Split ms = split(m, bytes_of(R"([{"name": "get_time", "arguments": {"tz": "UTC"}}, {"name": "get_weather", "arguments": {"city": "Rome"}}])"));
    ASSERT_EQ(ms.calls.size(), 2u);
    EXPECT_EQ(ms.calls[0].arguments, R"({"tz":"UTC"})");
    EXPECT_EQ(ms.calls[1].arguments, R"({"city":"Rome"})");
    EXPECT_GT(ms.num_argument_pieces, 10);
    ToolCallStream l(ToolFormat::kLlama3, kNames, true, 1);
    const Split ls = split(l, bytes_of(R"({"name": "get_time", "parameters": {"tz": "UTC"}})"));
    ASSERT_EQ(ls.calls.size(), 1u);
    EXPECT_EQ(ls.calls[0].arguments, R"({"tz":"UTC"})");
}

ToolRequest two_tools(ToolChoice choice, bool parallel) {
    ToolRequest r;
    r.names = kNames;
    r.parameters = {Json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"],
                                     "additionalProperties":false})"),
                    Json{{"type", "object"}, {"properties", Json::object()}, {"additionalProperties", false}}};
    r.choice = std::move(choice);
    r.parallel = parallel;
    return r;
}

bool grammar_accepts(ToolFormat format, const ToolRequest& r, const std::string& text) {
    const ToolCallGrammar g = tool_call_grammar(format, r);
    grammar::JsonSchemaOptions options;
    options.frame = g.frame;
    options.strict_additional_properties = g.strict;
    auto compiled = grammar::compile_json_schema_value(g.schema, options);
    EXPECT_TRUE(compiled.ok()) << compiled.status().message();
    return compiled.ok() && grammar::test::accepts_bytewise(compiled.value(), text);
}

TEST(ToolCallGrammar, RequiredAndNamedChoicesInEachFormat) {
    const ToolRequest required = two_tools({ToolChoiceMode::kRequired, ""}, true);
    const std::string weather = R"({"name":"get_weather","arguments":{"city":"Paris"}})";
    const std::string time = R"({"name":"get_time","arguments":{}})";
    EXPECT_TRUE(grammar_accepts(ToolFormat::kHermes, required, "<tool_call>\n" + weather + "\n</tool_call>"));
    EXPECT_TRUE(grammar_accepts(ToolFormat::kHermes, required,
                                "<tool_call>\n" + weather + "\n</tool_call>\n<tool_call>\n" + time + "\n</tool_call>"));
    EXPECT_FALSE(grammar_accepts(ToolFormat::kHermes, required, weather));  // the tag is required
    EXPECT_FALSE(grammar_accepts(ToolFormat::kHermes, required,
                                 "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}\n</tool_call>"));  // city
    EXPECT_TRUE(grammar_accepts(ToolFormat::kMistral, required, "[" + weather + "," + time + "]"));
    EXPECT_TRUE(grammar_accepts(ToolFormat::kLlama3, required, R"({"name":"get_time","parameters":{}})"));
    EXPECT_FALSE(grammar_accepts(ToolFormat::kLlama3, required, time));  // Llama-3 says "parameters"

    const ToolRequest named = two_tools({ToolChoiceMode::kNamed, "get_time"}, true);
    EXPECT_TRUE(grammar_accepts(ToolFormat::kHermes, named, "<tool_call>\n" + time + "\n</tool_call>"));
    EXPECT_FALSE(grammar_accepts(ToolFormat::kHermes, named, "<tool_call>\n" + weather + "\n</tool_call>"));
    EXPECT_FALSE(grammar_accepts(ToolFormat::kHermes, named,  // a named function is called once
                                 "<tool_call>\n" + time + "\n</tool_call>\n<tool_call>\n" + time + "\n</tool_call>"));
    const ToolRequest one = two_tools({ToolChoiceMode::kRequired, ""}, /*parallel=*/false);
    EXPECT_FALSE(grammar_accepts(ToolFormat::kMistral, one, "[" + weather + "," + time + "]"));
    EXPECT_TRUE(grammar_accepts(ToolFormat::kMistral, one, "[" + time + "]"));
    // A strict tool: no properties beyond those its schema declares (absent additionalProperties).
    ToolRequest loose = two_tools({ToolChoiceMode::kNamed, "get_time"}, true);
    loose.parameters[1] = Json{{"type", "object"}, {"properties", {{"tz", {{"type", "integer"}}}}}};
    const std::string extra = "<tool_call>\n{\"name\":\"get_time\",\"arguments\":{\"tz\":1,\"x\":2}}\n</tool_call>";
    EXPECT_TRUE(grammar_accepts(ToolFormat::kHermes, loose, extra));
    loose.strict = {false, true};
    EXPECT_FALSE(grammar_accepts(ToolFormat::kHermes, loose, extra));
}

std::optional<ApiError> parse_chat(const std::string& body, GenerationRequest& g) {
    return parse_generation_request(Endpoint::kChatCompletions, body, g);
}

const char* kToolsJson =
    R"("tools":[{"type":"function","function":{"name":"get_weather","description":"d",
       "parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}}},
       {"type":"function","function":{"name":"get_time"}}])";

TEST(ToolRequestParse, ToolsChoiceAndToolMessages) {
    GenerationRequest g;
    auto e = parse_chat(std::string(R"({"messages":[{"role":"user","content":"q"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
          "function":{"name":"get_weather","arguments":"{\"z\":\"x\",\"a\":1}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"sunny"}],)") + kToolsJson +
                            R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}},"parallel_tool_calls":false})",
                        g);
    ASSERT_FALSE(e) << e->param << ": " << e->message;
    EXPECT_EQ(g.tools.names, kNames);
    EXPECT_EQ(g.tools.choice.mode, ToolChoiceMode::kNamed);
    EXPECT_EQ(g.tools.choice.name, "get_time");
    EXPECT_FALSE(g.tools.parallel);
    ASSERT_EQ(g.tools.parameters.size(), 2u);
    EXPECT_EQ(g.tools.parameters[0]["properties"].begin().key(), "z");  // the client's key order
    EXPECT_EQ(g.tools.parameters[1], (Json{{"type", "object"}}));      // none given: any object
    EXPECT_EQ(g.tools.tools[0]["function"]["description"], "d");
    ASSERT_EQ(g.messages.size(), 3u);
    EXPECT_EQ(g.messages[1].tool_calls[0]["function"]["arguments"], (Json{{"z", "x"}, {"a", 1}}));
    EXPECT_EQ(g.messages[2].role, "tool");
    EXPECT_EQ(g.messages[2].tool_call_id, "call_1");
    // Defaults: auto with tools, none without.
    GenerationRequest d;
    ASSERT_FALSE(parse_chat(std::string(R"({"messages":[{"role":"user","content":"q"}],)") + kToolsJson + "}", d));
    EXPECT_EQ(d.tools.choice.mode, ToolChoiceMode::kAuto);
    EXPECT_TRUE(d.tools.active());
    EXPECT_TRUE(d.tools.parallel);
}

TEST(ToolRequestParse, BadToolFieldsAre400sNamingTheField) {
    const std::string user = R"({"messages":[{"role":"user","content":"q"}],)";
    const std::pair<std::string, std::string> cases[] = {
        {user + kToolsJson + R"(,"tool_choice":{"type":"function","function":{"name":"nope"}}})", "tool_choice"},
        {user + kToolsJson + R"(,"tool_choice":"sometimes"})", "tool_choice"},
        {user + R"("tool_choice":"required"})", "tool_choice"},
        {user + R"("tools":[{"type":"retrieval"}]})", "tools[0].type"},
        {user + R"("tools":[{"type":"function","function":{"name":"has space"}}]})", "tools[0].function.name"},
        {user + R"("tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]})", "tools[0].function.parameters"},
        {user + R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]})",
         "tools[1].function.name"},
        {user + kToolsJson + R"(,"logprobs":true})", "logprobs"},
        {user + kToolsJson + R"(,"tool_choice":"required","response_format":{"type":"json_object"}})", "tool_choice"},
        {R"({"messages":[{"role":"tool","content":"42"}]})", "messages[0].tool_call_id"},
        {R"({"messages":[{"role":"user","content":"x","tool_call_id":"1"}]})", "messages[0].tool_call_id"},
        {R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})", "messages[0].tool_calls"},
        {R"({"messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f"}}]}]})",
         "messages[0].tool_calls[0].function.arguments"},
    };
    for (const auto& [body, param] : cases) {
        GenerationRequest g;
        auto e = parse_chat(body, g);
        ASSERT_TRUE(e) << body;
        EXPECT_EQ(e->http_status, 400) << body;
        EXPECT_EQ(e->param, param) << body << ": " << e->message;
    }
}

TEST(ToolPrompt, TheTemplateSeesToolsCallsAndResults) {
    auto tok = tokenizer::Tokenizer::load(HICHAT_QWEN25_TOKENIZER_DIR);
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    auto tmpl = tokenizer::ChatTemplate::parse(template_of(HICHAT_QWEN25_TOKENIZER_DIR));
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
    PromptBuilder prompts(*tok.value(), &tmpl.value(), "", "<|im_end|>", ToolFormat::kHermes);
    GenerationRequest g;
    ASSERT_FALSE(parse_chat(std::string(R"({"messages":[{"role":"user","content":"weather?"},
        {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",
          "function":{"name":"get_weather","arguments":"{\"z\":\"Paris\"}"}}]},
        {"role":"tool","tool_call_id":"c1","content":"sunny"}],)") + kToolsJson + "}", g));
    auto text = prompts.render_chat(g.messages, true, g.tools.tools);
    ASSERT_TRUE(text.ok()) << text.status().message();
    EXPECT_NE(text->find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), std::string::npos) << *text;
    EXPECT_NE(text->find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"z\": \"Paris\"}}\n</tool_call>"),
              std::string::npos) << *text;
    EXPECT_NE(text->find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << *text;
    std::vector<int32_t> ids;
    EXPECT_FALSE(prompts.build(g, ids));
    EXPECT_FALSE(ids.empty());
    // A model whose template has no tool format refuses tools by name.
    PromptBuilder plain(*tok.value(), &tmpl.value(), "", "<|im_end|>", ToolFormat::kNone);
    auto e = plain.build(g, ids);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->param, "tools");
}

}  // namespace
}  // namespace hichat::api
