#include "api/openai_response.h"

#include <nlohmann/json.hpp>

#include "api/http/http_error.h"

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

Json envelope(const ResponseIds& ids, bool chunk) {
    const bool chat = ids.endpoint == Endpoint::kChatCompletions;
    return Json{{"id", ids.id},
                {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
                {"created", ids.created},
                {"model", ids.model}};
}

Json usage_json(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

std::string sse(const Json& j) {
    // Invalid UTF-8 cannot reach here (the detokenizer emits whole characters), but never throw.
    return "data: " + j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

Json choice(const ResponseIds& ids, int index, const Json& content_field, const Json& finish_reason) {
    Json c = {{"index", index}};
    if (ids.endpoint == Endpoint::kChatCompletions) {
        c["delta"] = content_field;
    } else {
        c["text"] = content_field;
    }
    c["logprobs"] = nullptr;
    c["finish_reason"] = finish_reason;
    return c;
}

}  // namespace

std::string completion_body(const ResponseIds& ids, std::span<const ChoiceOutput> choices, const Usage& usage) {
    Json j = envelope(ids, false);
    j["choices"] = Json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        Json c = {{"index", i}};
        if (ids.endpoint == Endpoint::kChatCompletions) {
            const ChoiceOutput& o = choices[i];
            const bool no_content = !o.tool_calls.empty() && o.text.find_first_not_of(" \t\r\n") == std::string::npos;
            c["message"] = {{"role", "assistant"}, {"content", no_content ? Json(nullptr) : Json(o.text)}};
            if (!o.tool_calls.empty()) {
                Json calls = Json::array();
                for (const ToolCall& t : o.tool_calls) {
                    calls.push_back({{"id", t.id}, {"type", "function"},
                                     {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
                }
                c["message"]["tool_calls"] = std::move(calls);
            }
        } else {
            c["text"] = choices[i].text;
        }
        c["logprobs"] = choices[i].logprobs ? *choices[i].logprobs : Json(nullptr);
        c["finish_reason"] = choices[i].finish_reason;
        j["choices"].push_back(std::move(c));
    }
    j["usage"] = usage_json(usage);
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string completion_body(const ResponseIds& ids, const std::string& text, const std::string& finish_reason,
                            const Usage& usage) {
    const ChoiceOutput one{text, finish_reason};
    return completion_body(ids, std::span<const ChoiceOutput>(&one, 1), usage);
}

DeltaChunkFormat delta_chunk_format(const ResponseIds& ids, int index) {
    const bool chat = ids.endpoint == Endpoint::kChatCompletions;
    std::string envelope = R"(data: {"id":)" + json_quote(ids.id);
    envelope += chat ? R"(,"object":"chat.completion.chunk","created":)" : R"(,"object":"text_completion","created":)";
    envelope += std::to_string(ids.created);
    envelope += R"(,"model":)" + json_quote(ids.model);
    envelope += R"(,"choices":[{"index":)" + std::to_string(index);
    DeltaChunkFormat f;
    if (chat) {
        f.first_head = envelope + R"(,"delta":{"role":"assistant","content":)";
        f.head = envelope + R"(,"delta":{"content":)";
        f.tail = R"(},"logprobs":null,"finish_reason":null}]})";
    } else {
        f.first_head = f.head = envelope + R"(,"text":)";
        f.tail = R"(,"logprobs":null,"finish_reason":null}]})";
    }
    f.tail += "\n\n";
    return f;
}

std::string delta_chunk(const DeltaChunkFormat& format, std::string_view text, bool first) {
    const std::string& head = first ? format.first_head : format.head;
    std::string out;
    out.reserve(head.size() + text.size() + 8 + format.tail.size());
    out += head;
    append_json_quoted(out, text);
    out += format.tail;
    return out;
}

std::string delta_chunk(const ResponseIds& ids, const std::string& text, bool first) {
    return delta_chunk(delta_chunk_format(ids), text, first);
}

std::string delta_chunk_with_logprobs(const ResponseIds& ids, int index, std::string_view text, bool first,
                                      const Json& logprobs) {
    Json j = envelope(ids, true);
    Json content;
    if (ids.endpoint == Endpoint::kChatCompletions) {
        content = first ? Json{{"role", "assistant"}, {"content", text}} : Json{{"content", text}};
    } else {
        content = text;
    }
    Json c = choice(ids, index, content, nullptr);
    c["logprobs"] = logprobs;
    j["choices"] = Json::array({c});
    return sse(j);
}

std::string tool_call_start_chunk(const ResponseIds& ids, int index, int call_index, const std::string& id,
                                  const std::string& name, bool first) {
    Json head = {{"index", call_index}, {"id", id}, {"type", "function"},
                 {"function", {{"name", name}, {"arguments", ""}}}};
    Json delta = {{"tool_calls", Json::array({head})}};
    if (first) delta = {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({head})}};
    Json j = envelope(ids, true);
    j["choices"] = Json::array({choice(ids, index, delta, nullptr)});
    return sse(j);
}

std::string tool_call_arguments_chunk(const ResponseIds& ids, int index, int call_index, std::string_view arguments) {
    Json args = {{"index", call_index}, {"function", {{"arguments", arguments}}}};
    Json j = envelope(ids, true);
    j["choices"] = Json::array({choice(ids, index, Json{{"tool_calls", Json::array({args})}}, nullptr)});
    return sse(j);
}

std::string finish_chunk(const ResponseIds& ids, const std::string& finish_reason, int index) {
    Json j = envelope(ids, true);
    Json content = ids.endpoint == Endpoint::kChatCompletions ? Json::object() : Json("");
    j["choices"] = Json::array({choice(ids, index, content, finish_reason)});
    return sse(j);
}

std::string usage_chunk(const ResponseIds& ids, const Usage& usage) {
    Json j = envelope(ids, true);
    j["choices"] = Json::array();
    j["usage"] = usage_json(usage);
    return sse(j);
}

std::string error_chunk(const ApiError& error) { return "data: " + error.to_json() + "\n\n"; }

}  // namespace hichat::api
