#include "api/input_items.h"

#include <random>

#include "api/openai_fields.h"
#include "api/text_input.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

bool is_message_role(const std::string& role) {
    return role == "user" || role == "assistant" || role == "system" || role == "developer";
}

// Item types of the schema HiChat does not implement yet (tools, reasoning, references, ...).
bool is_known_other_item_type(const std::string& type) {
    return type == "function_call" || type == "function_call_output" || type == "reasoning" ||
           type == "item_reference" || type == "file_search_call" || type == "web_search_call" ||
           type == "computer_call" || type == "computer_call_output" || type == "image_generation_call" ||
           type == "code_interpreter_call" || type == "local_shell_call" || type == "local_shell_call_output" ||
           type == "mcp_call" || type == "mcp_list_tools" || type == "mcp_approval_request" ||
           type == "mcp_approval_response" || type == "custom_tool_call" || type == "custom_tool_call_output";
}

ApiError unsupported_kind(const std::string& param, const std::string& what) {
    ApiError e = unsupported_field(param, "");
    e.message = param + " is " + what + ", which HiChat does not support yet";
    return e;
}

std::optional<ApiError> content_part(const Json& part, const std::string& param, std::string& text,
                                     std::vector<std::string>& ignored) {
    if (!part.is_object()) return bad_field(param, param + " must be an object");
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return bad_field(param + ".type", param + ".type must be a string");
    const std::string t = type->get<std::string>();
    if (t == "input_image" || t == "input_file" || t == "input_audio" || t == "refusal") {
        return unsupported_kind(param + ".type", "a content part of type " + t);
    }
    if (t != "input_text" && t != "output_text") {
        return bad_field(param + ".type", param + ".type must be input_text or output_text, got " + type->dump());
    }
    if (auto e = check_fields(FieldScope::kInputContentPart, part, param, ignored)) return e;
    const auto value = part.find("text");
    if (value == part.end() || !value->is_string()) return bad_field(param + ".text", param + ".text must be a string");
    text += value->get<std::string>();
    return std::nullopt;
}

std::optional<ApiError> message_content(const Json& content, const std::string& param, std::string& text,
                                        std::vector<std::string>& ignored) {
    if (content.is_string()) {
        text = content.get<std::string>();
        return std::nullopt;
    }
    if (!content.is_array()) return bad_field(param, param + " must be a string or an array of content parts");
    for (size_t i = 0; i < content.size(); ++i) {
        if (auto e = content_part(content[i], param + "[" + std::to_string(i) + "]", text, ignored)) return e;
    }
    return std::nullopt;
}

std::optional<ApiError> message_item(const Json& item, const std::string& param, InputMessage& out,
                                     std::vector<std::string>& ignored) {
    if (!item.is_object()) return bad_field(param, param + " must be an object");
    const auto type = item.find("type");
    if (type != item.end() && !type->is_null()) {
        if (!type->is_string()) return bad_field(param + ".type", param + ".type must be a string");
        const std::string t = type->get<std::string>();
        if (is_known_other_item_type(t)) return unsupported_kind(param + ".type", "an item of type " + t);
        if (t != "message") return bad_field(param + ".type", param + ".type must be \"message\", got " + type->dump());
    }
    if (auto e = check_fields(FieldScope::kInputItem, item, param, ignored)) return e;
    const auto role = item.find("role");
    if (role == item.end() || !role->is_string() || !is_message_role(role->get<std::string>())) {
        return bad_field(param + ".role", param + ".role must be user, assistant, system or developer");
    }
    out.role = role->get<std::string>();
    const auto content = item.find("content");
    if (content == item.end()) return bad_field(param + ".content", param + ".content is required");
    std::string text;
    if (auto e = message_content(*content, param + ".content", text, ignored)) return e;
    out.text = strip_control_chars(text);
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_input_items(const Json& value, const std::string& param, size_t max_items,
                                          std::vector<InputMessage>& out, std::vector<std::string>& ignored) {
    if (value.is_string()) {
        out.push_back({"user", strip_control_chars(value.get<std::string>())});
        return std::nullopt;
    }
    if (!value.is_array()) return bad_field(param, param + " must be a string or an array of items");
    if (value.size() > max_items) {
        return bad_field(param, param + " holds " + std::to_string(value.size()) + " items; at most " +
                                    std::to_string(max_items) + " are allowed");
    }
    for (size_t i = 0; i < value.size(); ++i) {
        InputMessage m;
        if (auto e = message_item(value[i], param + "[" + std::to_string(i) + "]", m, ignored)) return e;
        out.push_back(std::move(m));
    }
    return std::nullopt;
}

std::optional<ApiError> parse_metadata(const Json& value, const std::string& param, Json& out) {
    if (!value.is_object()) return bad_field(param, param + " must be an object of string values");
    if (value.size() > 16) {
        return bad_field(param, param + " holds " + std::to_string(value.size()) + " pairs; at most 16 are allowed");
    }
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string key_param = param + "." + it.key();
        if (it.key().size() > 64) return bad_field(param, param + " keys are at most 64 characters");
        if (!it->is_string()) return bad_field(key_param, key_param + " must be a string");
        if (it->get<std::string>().size() > 512) {
            return bad_field(key_param, key_param + " is longer than 512 characters");
        }
    }
    out = value;
    return std::nullopt;
}

bool is_valid_object_id(std::string_view id, std::string_view prefix) {
    if (id.size() <= prefix.size() + 1 || id.substr(0, prefix.size()) != prefix || id[prefix.size()] != '_') return false;
    const std::string_view rest = id.substr(prefix.size() + 1);
    if (rest.size() > 96) return false;
    for (char c : rest) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::string new_object_id(std::string_view prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32)};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id(prefix);
    id += '_';
    for (int word = 0; word < 3; ++word) {
        uint64_t bits = rng();
        for (int i = 0; i < 16; ++i, bits >>= 4) id += kHex[bits & 15];
    }
    return id;
}

Json message_item_json(const std::string& id, const InputMessage& m, std::string_view status) {
    Json part = {{"type", m.role == "assistant" ? "output_text" : "input_text"}, {"text", m.text}};
    if (m.role == "assistant") {
        part["annotations"] = Json::array();
        part["logprobs"] = Json::array();
    }
    return {{"type", "message"}, {"id", id}, {"status", status}, {"role", m.role}, {"content", Json::array({part})}};
}

std::optional<InputMessage> message_from_item_json(const Json& item) {
    if (!item.is_object() || item.value("type", "") != "message" || !item.contains("content")) return std::nullopt;
    InputMessage m{.role = item.value("role", "")};
    if (!is_message_role(m.role) || !item["content"].is_array()) return std::nullopt;
    for (const Json& part : item["content"]) {
        if (part.is_object() && part.contains("text") && part["text"].is_string()) m.text += part["text"].get<std::string>();
    }
    return m;
}

tokenizer::ChatMessage to_chat_message(const InputMessage& m) {
    return {m.role == "developer" ? "system" : m.role, m.text};
}

}  // namespace hichat::api
