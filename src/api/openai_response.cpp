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
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

std::string sse(const Json& j) {
    // Invalid UTF-8 cannot reach here (the detokenizer emits whole characters), but never throw.
    return "data: " + j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

Json choice(const ResponseIds& ids, const Json& content_field, const Json& finish_reason) {
    Json c = {{"index", 0}};
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

std::string completion_body(const ResponseIds& ids, const std::string& text, const std::string& finish_reason,
                            const Usage& usage) {
    Json j = envelope(ids, false);
    Json c = {{"index", 0}};
    if (ids.endpoint == Endpoint::kChatCompletions) {
        c["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
        c["text"] = text;
    }
    c["logprobs"] = nullptr;
    c["finish_reason"] = finish_reason;
    j["choices"] = Json::array({c});
    j["usage"] = usage_json(usage);
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Hot path (one call per generated token): the envelope is fixed per request, so the chunk is built
// by concatenation rather than through a JSON document.
std::string delta_chunk(const ResponseIds& ids, const std::string& text, bool first) {
    std::string out;
    out.reserve(160 + ids.id.size() + ids.model.size() + text.size());
    out += R"(data: {"id":)";
    out += json_quote(ids.id);
    const bool chat = ids.endpoint == Endpoint::kChatCompletions;
    out += chat ? R"(,"object":"chat.completion.chunk","created":)" : R"(,"object":"text_completion","created":)";
    out += std::to_string(ids.created);
    out += R"(,"model":)";
    out += json_quote(ids.model);
    if (chat) {
        out += first ? R"(,"choices":[{"index":0,"delta":{"role":"assistant","content":)"
                     : R"(,"choices":[{"index":0,"delta":{"content":)";
        out += json_quote(text);
        out += R"(},"logprobs":null,"finish_reason":null}]})";
    } else {
        out += R"(,"choices":[{"index":0,"text":)";
        out += json_quote(text);
        out += R"(,"logprobs":null,"finish_reason":null}]})";
    }
    out += "\n\n";
    return out;
}

std::string finish_chunk(const ResponseIds& ids, const std::string& finish_reason) {
    Json j = envelope(ids, true);
    Json content = ids.endpoint == Endpoint::kChatCompletions ? Json::object() : Json("");
    j["choices"] = Json::array({choice(ids, content, finish_reason)});
    return sse(j);
}

std::string usage_chunk(const ResponseIds& ids, const Usage& usage) {
    Json j = envelope(ids, true);
    j["choices"] = Json::array();
    j["usage"] = usage_json(usage);
    return sse(j);
}

std::string error_chunk(const std::string& message, const std::string& type) {
    return sse(Json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}});
}

}  // namespace hichat::api
