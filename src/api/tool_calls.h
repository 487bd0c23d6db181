// Tool calling in each model family's native format: which format a chat template speaks, the grammar
// that makes a reply one or more well-formed calls (tool_choice "required" or a named function), and
// ToolCallStream, which splits a reply's text into content and tool calls as it is generated. Pure;
// one ToolCallStream per choice, on the thread of its sink.
//
// Formats (the text the model writes; special tokens are not in the detokenized text):
//   kHermes  (Qwen2.5, Qwen3, Hermes):  <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call> ...
//   kLlama3  (Llama-3.1, 3.2, 3.3):     {"name": N, "parameters": {...}}   (after <|python_tag|>, or alone)
//   kMistral (Mistral v3 and later):    [TOOL_CALLS] [{"name": N, "arguments": {...}}, ...]
#pragma once

#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"

namespace hichat::api {

enum class ToolFormat { kNone, kHermes, kLlama3, kMistral };

// The format a chat template's source describes; kNone when it renders no tools.
ToolFormat detect_tool_format(std::string_view chat_template_source);
const char* tool_format_name(ToolFormat format);

enum class ToolChoiceMode { kNone, kAuto, kRequired, kNamed };

struct ToolChoice {
    ToolChoiceMode mode = ToolChoiceMode::kNone;
    std::string name;  // kNamed
};

// A request's tools: `tools` as the client wrote them (key order kept: templates print them), and the
// parts the server uses.
struct ToolRequest {
    nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // [{"type": "function", "function": {...}}]
    std::vector<std::string> names;                                 // tools[i].function.name
    std::vector<nlohmann::ordered_json> parameters;                 // tools[i].function.parameters (a schema)
    std::vector<bool> strict;                                       // tools[i].function.strict
    ToolChoice choice;
    bool parallel = true;  // parallel_tool_calls
    bool active() const { return choice.mode != ToolChoiceMode::kNone && !names.empty(); }
};

// The schema of one call object of `format` ({"name": const, "arguments"/"parameters": the tool's
// schema}), anyOf over the allowed tools, and the literal frame around the calls; for the grammar of
// tool_choice "required" (every tool) and a named function (that one).
struct ToolCallGrammar {
    nlohmann::ordered_json schema;
    grammar::JsonFrame frame;
    bool strict = false;  // an allowed tool is strict: no properties beyond its schema's (for all of them)
};
ToolCallGrammar tool_call_grammar(ToolFormat format, const ToolRequest& request);

struct ToolCall {
    std::string id;         // "call_..." (Mistral: 9 letters and digits, as its templates require)
    std::string name;
    std::string arguments;  // JSON text
};

// One piece of a reply: content text, or a whole tool call.
struct ReplyPart {
    std::string content;            // when !call
    std::optional<ToolCall> call;
};

class ToolCallStream {
public:
    // `names`: the tools the request offers; a call naming another is kept as content. `parallel`
    // false keeps the first call only. `seed` picks the call ids.
    ToolCallStream(ToolFormat format, std::vector<std::string> names, bool parallel, uint64_t seed);

    // The parts that `text` (the next piece of the reply) completes. Text that may begin a call is
    // held until the call is complete or turns out not to be one.
    std::vector<ReplyPart> push(std::string_view text);
    // The rest, at the end of the reply: a call left open is parsed if it is whole JSON, else content.
    std::vector<ReplyPart> finish();

    int num_calls() const { return num_calls_; }

private:
    void emit_content(std::string text, std::vector<ReplyPart>& out);
    // The calls that `json` (one call object, or for Mistral an array of them) holds; false if it is not one.
    bool emit_calls(std::string_view json, std::vector<ReplyPart>& out);
    std::string new_id();

    ToolFormat format_;
    std::vector<std::string> names_;
    bool parallel_;
    std::mt19937_64 rng_;
    std::string held_;        // text not yet given out
    bool in_call_ = false;    // kHermes: after <tool_call>
    bool decided_ = false;    // kLlama3 / kMistral: whether the reply is a call is known
    bool whole_reply_call_ = false;
    bool seen_text_ = false;  // kHermes: some content or a call came before
    int num_calls_ = 0;
};

}  // namespace hichat::api
