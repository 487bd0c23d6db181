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

#include "api/json_scan.h"
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
    std::string arguments;  // JSON text, without the whitespace between its tokens
};

// One piece of a reply: content text, the start of a tool call (its id and name), or the next piece of
// a call's arguments. A call's arguments are its pieces joined.
struct ReplyPart {
    enum class Kind { kContent, kCallStart, kArguments };
    Kind kind = Kind::kContent;
    std::string text;    // kContent: the text; kArguments: the piece
    int call_index = 0;  // kCallStart, kArguments: the call's index in the reply
    std::string id, name;  // kCallStart
};

// Splits a reply into content and calls as its text arrives. A call object whose members begin
// {"name": <an offered tool>, "arguments"/"parameters": {... (the order the templates and the call
// grammar write) is a call from that point on: its start goes out at once and its arguments piece by
// piece as they are generated, up to where their value closes (or the reply ends: a reply cut short
// gives the arguments it has). Any other object is a call only once it is whole, valid JSON naming an
// offered tool with arguments (one piece); what is not a call stays content. The same parts come out,
// joined, whatever the pieces of text.
class ToolCallStream {
public:
    // `names`: the tools the request offers; a call naming another is kept as content. `parallel`
    // false keeps the first call only. `seed` picks the call ids.
    ToolCallStream(ToolFormat format, std::vector<std::string> names, bool parallel, uint64_t seed);

    // The parts that `text` (the next piece of the reply) gives. Text that may begin a call is held
    // until it is known whether it does.
    std::vector<ReplyPart> push(std::string_view text);
    // The rest, at the end of the reply.
    std::vector<ReplyPart> finish();

    int num_calls() const { return num_calls_; }

private:
    // Where the scan of the open region stands: before a call object, in its head, streaming its
    // arguments, past them (to the object's end), waiting for a whole object, or done with the region.
    enum class Scan { kSeek, kHead, kArguments, kAfterArguments, kWhole, kDone };

    void emit_content(std::string text, std::vector<ReplyPart>& out);
    void start_call(std::string name, std::vector<ReplyPart>& out);
    void emit_arguments(std::string_view raw, std::vector<ReplyPart>& out);
    // Opens a region: call objects (Hermes: the text after <tool_call>; Llama-3 and Mistral: the reply).
    void open_region(std::string text);
    // Scans the region as far as its text allows; `closed`: no more text will come.
    void advance(bool closed, std::vector<ReplyPart>& out);
    void scan_head(bool closed, std::vector<ReplyPart>& out);
    void scan_whole(bool closed, std::vector<ReplyPart>& out);
    // The region's end: with no call found in it, its text is content (Hermes: with its tags).
    void close_region(bool tagged, std::vector<ReplyPart>& out);
    bool offers(const std::string& name) const;
    std::string new_id();

    ToolFormat format_;
    std::vector<std::string> names_;
    bool parallel_;
    std::mt19937_64 rng_;
    std::string held_;        // text outside a region not yet given out
    bool decided_ = false;    // kLlama3 / kMistral: whether the reply is a call region is known
    int num_calls_ = 0;
    std::string space_after_call_;  // whitespace after a call, given out only if content follows
    bool content_since_call_ = false;  // content was given out after the last call started

    // The open region.
    bool in_region_ = false;
    std::string region_;        // its text so far (Hermes: without the closing tag)
    Scan scan_ = Scan::kSeek;
    size_t at_ = 0;             // kSeek: where to look next; else the current object's start
    size_t args_at_ = 0;        // kArguments: the arguments value's start
    size_t args_sent_ = 0;      // kArguments: region bytes given out as arguments so far
    size_t after_at_ = 0;       // kAfterArguments: where the rest of the object is scanned from
    int region_calls_ = 0;      // calls found in the region
    JsonCompactor compactor_;   // the current call's arguments
};

}  // namespace hichat::api
