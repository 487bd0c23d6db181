#include "api/tool_calls.h"

#include <algorithm>

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The length of the longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    }
    return 0;
}

const char* arguments_key(ToolFormat format) { return format == ToolFormat::kLlama3 ? "parameters" : "arguments"; }

}  // namespace

ToolFormat detect_tool_format(std::string_view source) {
    if (contains(source, kHermesOpen)) return ToolFormat::kHermes;
    if (contains(source, "[TOOL_CALLS]")) return ToolFormat::kMistral;
    if (contains(source, "tools") && contains(source, "\"parameters\"")) return ToolFormat::kLlama3;
    return ToolFormat::kNone;
}

const char* tool_format_name(ToolFormat format) {
    switch (format) {
        case ToolFormat::kHermes: return "hermes";
        case ToolFormat::kLlama3: return "llama3_json";
        case ToolFormat::kMistral: return "mistral";
        case ToolFormat::kNone: break;
    }
    return "none";
}

ToolCallGrammar tool_call_grammar(ToolFormat format, const ToolRequest& request) {
    const char* args = arguments_key(format);
    Json alternatives = Json::array();
    ToolCallGrammar g;
    for (size_t i = 0; i < request.names.size(); ++i) {
        if (request.choice.mode == ToolChoiceMode::kNamed && request.names[i] != request.choice.name) continue;
        g.strict = g.strict || (i < request.strict.size() && request.strict[i]);
        Json call = {{"type", "object"},
                     {"properties", {{"name", {{"const", request.names[i]}}}, {args, request.parameters[i]}}},
                     {"required", {"name", args}},
                     {"additionalProperties", false}};
        alternatives.push_back(std::move(call));
    }
    g.schema = alternatives.size() == 1 ? alternatives[0] : Json{{"anyOf", alternatives}};
    const bool many = request.choice.mode == ToolChoiceMode::kRequired && request.parallel;
    switch (format) {
        case ToolFormat::kHermes:
            g.frame = {.begin = "<tool_call>\n", .separator = "\n</tool_call>\n<tool_call>\n", .end = "\n</tool_call>"};
            break;
        case ToolFormat::kMistral: g.frame = {.begin = "[", .separator = ",", .end = "]"}; break;
        case ToolFormat::kLlama3:  // one call per reply (the Llama-3 templates refuse several)
        case ToolFormat::kNone: break;
    }
    g.frame.max_values = many && format != ToolFormat::kLlama3 ? -1 : 1;
    return g;
}

ToolCallStream::ToolCallStream(ToolFormat format, std::vector<std::string> names, bool parallel, uint64_t seed)
    : format_(format), names_(std::move(names)), parallel_(parallel), rng_(seed) {}

std::string ToolCallStream::new_id() {
    static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const bool mistral = format_ == ToolFormat::kMistral;
    std::string id = mistral ? "" : "call_";
    for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[rng_() % (sizeof(kAlnum) - 1)];
    return id;
}

void ToolCallStream::emit_content(std::string text, std::vector<ReplyPart>& out) {
    if (text.empty()) return;
    // The line breaks between and after calls are the format's, not content.
    if (num_calls_ > 0 && trim(text).empty()) return;
    if (!out.empty() && !out.back().call) {
        out.back().content += text;
    } else {
        out.push_back({std::move(text), std::nullopt});
    }
}

bool ToolCallStream::emit_calls(std::string_view json, std::vector<ReplyPart>& out) {
    const Json parsed = Json::parse(trim(json), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return false;
    std::vector<const Json*> objects;
    if (parsed.is_object()) {
        objects.push_back(&parsed);
    } else if (parsed.is_array() && format_ == ToolFormat::kMistral && !parsed.empty()) {
        for (const Json& o : parsed) objects.push_back(&o);
    } else {
        return false;
    }
    std::vector<ToolCall> calls;
    for (const Json* o : objects) {
        if (!o->is_object()) return false;
        const auto name = o->find("name");
        if (name == o->end() || !name->is_string()) return false;
        if (std::find(names_.begin(), names_.end(), name->get<std::string>()) == names_.end()) return false;
        auto args = o->find("arguments");
        if (args == o->end()) args = o->find("parameters");
        if (args == o->end()) return false;
        calls.push_back({"", name->get<std::string>(), args->is_string() ? args->get<std::string>() : args->dump()});
    }
    for (ToolCall& c : calls) {
        if (!parallel_ && num_calls_ > 0) break;
        c.id = new_id();
        ++num_calls_;
        out.push_back({"", std::move(c)});
    }
    return true;
}

std::vector<ReplyPart> ToolCallStream::push(std::string_view text) {
    std::vector<ReplyPart> out;
    if (format_ == ToolFormat::kNone) {
        emit_content(std::string(text), out);
        return out;
    }
    held_ += text;
    if (format_ != ToolFormat::kHermes) {
        // The whole reply is a call or it is content, as its first character shows.
        if (!decided_) {
            const std::string_view t = trim(held_);
            if (t.empty()) return out;
            decided_ = true;
            whole_reply_call_ = t.front() == (format_ == ToolFormat::kLlama3 ? '{' : '[');
        }
        if (!whole_reply_call_) emit_content(std::exchange(held_, {}), out);
        return out;
    }
    for (;;) {
        if (!in_call_) {
            const size_t at = held_.find(kHermesOpen);
            if (at == std::string::npos) {
                const size_t keep = partial_marker(held_, kHermesOpen);
                emit_content(held_.substr(0, held_.size() - keep), out);
                held_.erase(0, held_.size() - keep);
                return out;
            }
            emit_content(held_.substr(0, at), out);
            held_.erase(0, at + kHermesOpen.size());
            in_call_ = true;
        } else {
            const size_t at = held_.find(kHermesClose);
            if (at == std::string::npos) return out;
            const std::string body = held_.substr(0, at);
            if (!emit_calls(body, out)) emit_content(std::string(kHermesOpen) + body + std::string(kHermesClose), out);
            held_.erase(0, at + kHermesClose.size());
            in_call_ = false;
        }
    }
}

std::vector<ReplyPart> ToolCallStream::finish() {
    std::vector<ReplyPart> out;
    std::string rest = std::exchange(held_, {});
    const bool open_call = format_ == ToolFormat::kHermes ? in_call_ : whole_reply_call_;
    if (open_call && emit_calls(rest, out)) return out;
    if (format_ == ToolFormat::kHermes && in_call_) rest = std::string(kHermesOpen) + rest;
    emit_content(std::move(rest), out);
    return out;
}

}  // namespace hichat::api
