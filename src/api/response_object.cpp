#include "api/response_object.h"

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

Json output_text_part(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
}

Json usage_json(const ResponseState& s) {
    return {{"input_tokens", s.num_input_tokens},
            {"input_tokens_details", {{"cached_tokens", s.num_cached_tokens}}},
            {"output_tokens", s.num_output_tokens},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", s.num_input_tokens + s.num_output_tokens}};
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

Json output_item_json(const ResponseState& s) {
    Json content = Json::array();
    if (s.output_done) content.push_back(output_text_part(s.text));
    return {{"id", s.output_item_id}, {"type", "message"}, {"status", s.output_done ? "completed" : "in_progress"},
            {"role", "assistant"}, {"content", content}};
}

bool is_final_response_status(std::string_view status) {
    return status == "completed" || status == "incomplete" || status == "failed" || status == "cancelled";
}

Json response_json(const ResponseState& s) {
    const bool finished = s.status == "completed" || s.status == "incomplete";
    Json j = {{"id", s.id}, {"object", "response"}, {"created_at", s.created_at}, {"status", s.status},
              {"background", s.background}};
    j["error"] = s.status == "failed" ? Json{{"code", s.error_code}, {"message", s.error_message}} : Json(nullptr);
    j["incomplete_details"] = s.incomplete_reason.empty() ? Json(nullptr) : Json{{"reason", s.incomplete_reason}};
    j["instructions"] = s.instructions ? Json(*s.instructions) : Json(nullptr);
    j["max_output_tokens"] = s.max_output_tokens ? Json(*s.max_output_tokens) : Json(nullptr);
    j["max_tool_calls"] = nullptr;
    j["model"] = s.model;
    j["output"] = finished ? Json::array({output_item_json(s)}) : Json::array();
    j["parallel_tool_calls"] = true;
    j["previous_response_id"] = s.previous_response_id.empty() ? Json(nullptr) : Json(s.previous_response_id);
    j["conversation"] = s.conversation_id.empty() ? Json(nullptr) : Json{{"id", s.conversation_id}};
    j["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
    j["service_tier"] = "default";
    j["store"] = s.store;
    j["temperature"] = s.temperature;
    j["text"] = {{"format", {{"type", "text"}}}, {"verbosity", "medium"}};
    j["tool_choice"] = "auto";
    j["tools"] = Json::array();
    j["top_logprobs"] = 0;
    j["top_p"] = s.top_p;
    j["truncation"] = s.truncation_auto ? "auto" : "disabled";
    j["usage"] = finished ? usage_json(s) : Json(nullptr);
    j["user"] = s.user.empty() ? Json(nullptr) : Json(s.user);
    j["metadata"] = s.metadata;
    return j;
}

std::string ResponseEvents::event(const std::string& type, Json payload) {
    Json j = {{"type", type}, {"sequence_number", next_sequence_number_++}};
    for (auto it = payload.begin(); it != payload.end(); ++it) j[it.key()] = it.value();
    return "event: " + type + "\ndata: " + dump(j) + "\n\n";
}

std::string ResponseEvents::created(const ResponseState& s) {
    std::string out = event("response.created", {{"response", response_json(s)}});
    return out + event("response.in_progress", {{"response", response_json(s)}});
}

std::string ResponseEvents::item_started(const ResponseState& s) {
    std::string out = event("response.output_item.added", {{"output_index", 0}, {"item", output_item_json(s)}});
    return out + event("response.content_part.added", {{"item_id", s.output_item_id}, {"output_index", 0},
                                                       {"content_index", 0}, {"part", output_text_part("")}});
}

std::string ResponseEvents::text_delta(const ResponseState& s, const std::string& delta) {
    return event("response.output_text.delta", {{"item_id", s.output_item_id}, {"output_index", 0},
                                                {"content_index", 0}, {"delta", delta}, {"logprobs", Json::array()}});
}

std::string ResponseEvents::finished(const ResponseState& s) {
    const Json where = {{"item_id", s.output_item_id}, {"output_index", 0}, {"content_index", 0}};
    Json text_done = where;
    text_done["text"] = s.text;
    text_done["logprobs"] = Json::array();
    Json part_done = where;
    part_done["part"] = output_text_part(s.text);
    // One statement per event: the operands of + are evaluated in no fixed order.
    std::string out = event("response.output_text.done", text_done);
    out += event("response.content_part.done", part_done);
    out += event("response.output_item.done", {{"output_index", 0}, {"item", output_item_json(s)}});
    out += event(s.status == "completed" ? "response.completed" : "response.incomplete", {{"response", response_json(s)}});
    return out;
}

std::string ResponseEvents::error(const ApiError& e) {
    return event("error", {{"code", e.code.empty() ? Json(nullptr) : Json(e.code)},
                           {"message", e.message},
                           {"param", e.param.empty() ? Json(nullptr) : Json(e.param)}});
}

}  // namespace hichat::api
