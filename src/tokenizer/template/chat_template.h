// Chat templates from tokenizer_config.json (`chat_template`), rendered by our own Jinja-subset
// interpreter so that the output is byte-identical to @huggingface/jinja, the renderer transformers.js
// uses (and, for the templates of Llama-3.2, Qwen2.5, Qwen3 and Mistral-7B, to transformers).
// A ChatTemplate is immutable after parse(): render() may run on any thread, concurrently.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace hichat::tokenizer {

namespace jinja {
struct Stmt;
}

struct ChatMessage {
    std::string role;
    std::string content;
    // An assistant turn's calls, [{"id", "type", "function": {"name", "arguments"}}], with arguments
    // as JSON values (templates print them with tojson); null when the message has none.
    nlohmann::ordered_json tool_calls = nullptr;
    std::string tool_call_id;  // a tool message's: the call it answers
};

struct ChatTemplateInputs {
    std::vector<ChatMessage> messages;
    bool add_generation_prompt = true;
    // Special tokens as tokenizer_config.json gives them; empty means the config has none, and the
    // variable is left undefined (transformers only passes the special tokens that are set).
    std::string bos_token, eos_token;
    // More variables, e.g. {"tools": [...], "date_string": "26 Jul 2024", "enable_thinking": false}.
    // Must be an object or null; these override the fields above when names clash.
    nlohmann::ordered_json extra_vars = nullptr;
    // Clock for strftime_now(); unset: the local time when render() runs.
    std::optional<std::tm> local_time;
};

class ChatTemplate {
public:
    // Parses once. Fails on syntax errors and on anything the interpreter does not support (unknown
    // statements, filters or tests), naming line and column.
    static Result<ChatTemplate> parse(std::string_view source);

    // Fails with the position and the reason on a runtime error, including the template's own
    // raise_exception("...") ("chat template line L, column C: raise_exception: ...").
    Result<std::string> render(const ChatTemplateInputs& in) const;

private:
    explicit ChatTemplate(std::shared_ptr<const std::vector<jinja::Stmt>> program) : program_(std::move(program)) {}

    std::shared_ptr<const std::vector<jinja::Stmt>> program_;  // shared: copies are cheap and read-only
};

}  // namespace hichat::tokenizer
