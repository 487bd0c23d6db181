#include "api/openai_response.h"

#include <nlohmann/json.hpp>

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

std::string delta_chunk(const ResponseIds& ids, const std::string& text, bool first) {
    Json j = envelope(ids, true);
    Json content = text;
    if (ids.endpoint == Endpoint::kChatCompletions) {
        content = first ? Json{{"role", "assistant"}, {"content", text}} : Json{{"content", text}};
    }
    j["choices"] = Json::array({choice(ids, content, nullptr)});
    return sse(j);
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
