#include "api/responses_request.h"

#include <cmath>

#include "api/http/http_request.h"
#include "api/openai_fields.h"
#include "api/openai_request.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxInputItems = 4096;
constexpr size_t kMaxConversationItems = 20;  // per create / items.create call, as OpenAI

const Json* field(const Json& body, const char* name) {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<ApiError> string_field(const Json& body, const char* name, std::string& out) {
    const Json* v = field(body, name);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) return bad_field(name, std::string(name) + " must be a string");
    out = v->get<std::string>();
    return std::nullopt;
}

std::optional<ApiError> number_field(const Json& body, const char* name, float& out, double lo, double hi, bool lo_open) {
    const Json* v = field(body, name);
    if (v == nullptr) return std::nullopt;
    const double d = v->is_number() ? v->get<double>() : NAN;
    const auto f = static_cast<float>(d);
    if (!std::isfinite(d) || (lo_open ? d <= lo || f <= lo : d < lo) || d > hi) {
        return bad_field(name, std::string(name) + " must be a number in " + (lo_open ? "(" : "[") +
                                   std::to_string(static_cast<int>(lo)) + ", " + std::to_string(static_cast<int>(hi)) +
                                   "], got " + v->dump());
    }
    out = f;
    return std::nullopt;
}

std::optional<ApiError> parse_ids(const Json& body, ResponsesRequest& out) {
    if (auto e = string_field(body, "previous_response_id", out.previous_response_id)) return e;
    if (!out.previous_response_id.empty() && !is_valid_object_id(out.previous_response_id, "resp")) {
        return bad_field("previous_response_id",
                         "previous_response_id must be a response id (resp_...), got " + field(body, "previous_response_id")->dump());
    }
    if (const Json* conv = field(body, "conversation")) {
        const Json* id = conv->is_object() ? field(*conv, "id") : conv;
        const std::string param = conv->is_object() ? "conversation.id" : "conversation";
        if (id == nullptr || !id->is_string() || !is_valid_object_id(id->get<std::string>(), "conv")) {
            return bad_field(param, param + " must be a conversation id (conv_...) or {\"id\": ...}");
        }
        out.conversation_id = id->get<std::string>();
    }
    if (!out.previous_response_id.empty() && !out.conversation_id.empty()) {
        return bad_field("conversation", "conversation and previous_response_id cannot both be given");
    }
    return std::nullopt;
}

std::optional<ApiError> parse_text(const Json& body, std::vector<std::string>& ignored) {
    const Json* text = field(body, "text");
    if (text == nullptr) return std::nullopt;
    if (!text->is_object()) return bad_field("text", "text must be an object");
    if (auto e = check_fields(FieldScope::kResponseText, *text, "text", ignored)) return e;
    const Json* format = field(*text, "format");
    if (format == nullptr) return std::nullopt;
    if (!format->is_object() || !format->contains("type") || !(*format)["type"].is_string()) {
        return bad_field("text.format", "text.format must be an object with a string type");
    }
    if ((*format)["type"] != "text") return unsupported_field("text.format", "{\"type\": \"text\"}");
    return std::nullopt;
}

std::optional<ApiError> parse_options(const Json& body, ResponsesRequest& out) {
    if (const Json* v = field(body, "max_output_tokens")) {
        if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > INT32_MAX) {
            return bad_field("max_output_tokens", "max_output_tokens must be an integer in [1, 2147483647], got " + v->dump());
        }
        out.max_output_tokens = static_cast<int>(v->get<int64_t>());
    }
    if (auto e = number_field(body, "temperature", out.sampling.temperature, 0.0, 2.0, false)) return e;
    if (auto e = number_field(body, "top_p", out.sampling.top_p, 0.0, 1.0, true)) return e;
    for (auto [name, dst] : {std::pair{"stream", &out.stream}, std::pair{"store", &out.store},
                             std::pair{"background", &out.background}}) {
        if (const Json* v = field(body, name)) {
            if (!v->is_boolean()) return bad_field(name, std::string(name) + " must be a boolean");
            *dst = v->get<bool>();
        }
    }
    if (const Json* v = field(body, "truncation")) {
        if (*v != "auto" && *v != "disabled") return bad_field("truncation", "truncation must be \"auto\" or \"disabled\"");
        out.truncation_auto = *v == "auto";
    }
    if (const Json* v = field(body, "metadata")) {
        if (auto e = parse_metadata(*v, "metadata", out.metadata)) return e;
    }
    if (auto e = string_field(body, "model", out.model)) return e;
    return string_field(body, "user", out.user);
}

// A background response is polled by id, so it must be stored; its events are not streamed (OpenAI
// streams them and resumes with starting_after, which HiChat does not build).
std::optional<ApiError> check_background(const ResponsesRequest& r) {
    if (!r.background) return std::nullopt;
    if (!r.store) {
        return bad_field("background", "background: true needs store: true (a background response is stored and "
                                       "polled with GET /v1/responses/{id}); got store: false");
    }
    if (r.stream) {
        return ApiError{.http_status = 400,
                        .message = "background with stream: true is not supported by HiChat yet; create it with "
                                   "stream: false and poll GET /v1/responses/{id}",
                        .param = "background",
                        .code = "unsupported_field"};
    }
    return std::nullopt;
}

// "a%20b" -> "a b"; '+' is a space in a query.
std::string query_value(std::string_view raw) {
    std::string s(raw);
    for (char& c : s) c = c == '+' ? ' ' : c;
    return percent_decode(s).value_or(s);
}

}  // namespace

std::optional<ApiError> parse_responses_request(std::string body, ResponsesRequest& out) {
    Json json;
    if (auto e = parse_json_object(std::move(body), json)) return e;
    out = ResponsesRequest{};
    if (auto e = check_fields(FieldScope::kResponses, json, "", out.ignored_fields)) return e;
    const Json* input = field(json, "input");
    if (input == nullptr) return bad_field("input", "input is required");
    if (auto e = parse_input_items(*input, "input", kMaxInputItems, out.input, out.ignored_fields)) return e;
    if (out.input.empty()) return bad_field("input", "input must hold at least one item");
    if (const Json* v = field(json, "instructions")) {
        if (!v->is_string()) return bad_field("instructions", "instructions must be a string");
        out.instructions = v->get<std::string>();
    }
    if (auto e = parse_ids(json, out)) return e;
    if (auto e = parse_text(json, out.ignored_fields)) return e;
    if (auto e = parse_options(json, out)) return e;
    return check_background(out);
}

std::optional<ApiError> parse_conversation_request(std::string body, bool update, ConversationRequest& out) {
    Json json;
    if (body.empty() && !update) body = "{}";  // the SDK's create() with no arguments
    if (auto e = parse_json_object(std::move(body), json)) return e;
    std::vector<std::string> ignored;
    if (auto e = check_fields(FieldScope::kConversation, json, "", ignored)) return e;
    if (const Json* m = field(json, "metadata")) {
        Json metadata;
        if (auto e = parse_metadata(*m, "metadata", metadata)) return e;
        out.metadata = std::move(metadata);
    } else if (update) {
        return bad_field("metadata", "metadata is required");
    }
    if (const Json* items = field(json, "items")) {
        if (update) return bad_field("items", "items cannot be updated; use POST /v1/conversations/{id}/items");
        if (!items->is_array()) return bad_field("items", "items must be an array of items");
        if (auto e = parse_input_items(*items, "items", kMaxConversationItems, out.items, ignored)) return e;
    }
    return std::nullopt;
}

std::optional<ApiError> parse_items_request(std::string body, std::vector<InputMessage>& out) {
    Json json;
    if (auto e = parse_json_object(std::move(body), json)) return e;
    const Json* items = field(json, "items");
    if (items == nullptr || !items->is_array() || items->empty()) {
        return bad_field("items", "items must be a non-empty array of items");
    }
    std::vector<std::string> ignored;
    return parse_input_items(*items, "items", kMaxConversationItems, out, ignored);
}

std::optional<ApiError> parse_list_query(const std::string& query, ListQuery& out) {
    size_t start = 0;
    while (start <= query.size() && !query.empty()) {
        size_t end = query.find('&', start);
        if (end == std::string::npos) end = query.size();
        const std::string_view pair = std::string_view(query).substr(start, end - start);
        const size_t eq = pair.find('=');
        const std::string key(pair.substr(0, eq));
        const std::string value = eq == std::string_view::npos ? "" : query_value(pair.substr(eq + 1));
        if (key == "after") {
            out.after = value;
        } else if (key == "limit") {
            char* rest = nullptr;
            const long n = std::strtol(value.c_str(), &rest, 10);
            if (value.empty() || *rest != '\0' || n < 1 || n > 100) {
                return bad_field("limit", "limit must be an integer in [1, 100], got \"" + value + "\"");
            }
            out.limit = static_cast<int>(n);
        } else if (key == "order") {
            if (value != "asc" && value != "desc") return bad_field("order", "order must be asc or desc");
            out.ascending = value == "asc";
        }
        start = end + 1;
    }
    return std::nullopt;
}

}  // namespace hichat::api
