#include "tokenizer/template/chat_template.h"

#include <utility>

#include "tokenizer/template/ast.h"
#include "tokenizer/template/builtins.h"
#include "tokenizer/template/interpreter.h"
#include "tokenizer/template/parser.h"

namespace hichat::tokenizer {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
    Result<std::shared_ptr<const jinja::Body>> program = jinja::parse_template(source);
    if (!program.ok()) return program.status();
    return ChatTemplate(std::move(*program));
}

namespace {

jinja::Value messages_value(const std::vector<ChatMessage>& messages) {
    std::vector<jinja::Value> items;
    items.reserve(messages.size());
    for (const ChatMessage& m : messages) {
        jinja::Dict d;
        d.set("role", jinja::Value::string(m.role));
        d.set("content", jinja::Value::string(m.content));
        if (!m.tool_calls.is_null()) d.set("tool_calls", jinja::Value::from_json(m.tool_calls));
        if (!m.tool_call_id.empty()) d.set("tool_call_id", jinja::Value::string(m.tool_call_id));
        items.push_back(jinja::Value::dict(std::move(d)));
    }
    return jinja::Value::list(std::move(items));
}

// The reference refuses to redeclare a built-in global (true, none, range, ...).
Status add_variable(jinja::Dict& globals, const std::string& name, jinja::Value value, bool may_replace) {
    if (globals.find(name) && !may_replace) return invalid_argument("chat template variable '" + name + "' clashes with a built-in name");
    globals.set(name, std::move(value));
    return ok_status();
}

}  // namespace

Result<std::string> ChatTemplate::render(const ChatTemplateInputs& in) const {
    if (!in.extra_vars.is_null() && !in.extra_vars.is_object())
        return invalid_argument("chat template extra_vars must be a JSON object");
    jinja::Dict globals = jinja::make_globals(in.local_time);
    const size_t num_builtins = globals.entries.size();
    HICHAT_RETURN_IF_ERROR(add_variable(globals, "messages", messages_value(in.messages), false));
    HICHAT_RETURN_IF_ERROR(add_variable(globals, "add_generation_prompt", jinja::Value::boolean(in.add_generation_prompt), false));
    if (!in.bos_token.empty()) HICHAT_RETURN_IF_ERROR(add_variable(globals, "bos_token", jinja::Value::string(in.bos_token), false));
    if (!in.eos_token.empty()) HICHAT_RETURN_IF_ERROR(add_variable(globals, "eos_token", jinja::Value::string(in.eos_token), false));
    if (in.extra_vars.is_object()) {
        for (const auto& [name, value] : in.extra_vars.items()) {
            bool builtin_name = false;
            for (size_t i = 0; i < num_builtins; ++i) builtin_name = builtin_name || globals.entries[i].first == name;
            HICHAT_RETURN_IF_ERROR(add_variable(globals, name, jinja::Value::from_json(value), !builtin_name));
        }
    }
    jinja::Interpreter interpreter(std::move(globals));
    return interpreter.render(*program_);
}

}  // namespace hichat::tokenizer
