// Input items of the Responses and Conversations APIs: message items (role user, assistant, system or
// developer; content a string or input_text / output_text parts), their stored JSON form, metadata
// maps and object ids. Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "tokenizer/template/chat_template.h"

namespace hichat::api {

struct InputMessage {
    std::string role;  // user, assistant, system or developer (as the client wrote it)
    std::string text;  // the text parts joined; control characters stripped
};

// `value` is a string (one user message) or an array of message items (at most `max_items`).
// Errors name the item ("input[2].content[0].type"); keys outside the schema go to `ignored`.
std::optional<ApiError> parse_input_items(const nlohmann::json& value, const std::string& param, size_t max_items,
                                          std::vector<InputMessage>& out, std::vector<std::string>& ignored);

// OpenAI's metadata: at most 16 pairs, keys of at most 64 characters, string values of at most 512.
std::optional<ApiError> parse_metadata(const nlohmann::json& value, const std::string& param, nlohmann::json& out);

// "resp_" / "conv_" / "msg_" followed by 1 to 96 letters, digits, '_' or '-'.
bool is_valid_object_id(std::string_view id, std::string_view prefix);
// A fresh random id: prefix, '_', 48 hex digits.
std::string new_object_id(std::string_view prefix);

// The stored and served form: {"type":"message","id","status","role","content":[{"type":"input_text"|
// "output_text","text",...}]}.
nlohmann::json message_item_json(const std::string& id, const InputMessage& m, std::string_view status = "completed");
// The message an item of that form holds; nullopt for anything else.
std::optional<InputMessage> message_from_item_json(const nlohmann::json& item);

// The chat template's message (developer becomes system).
tokenizer::ChatMessage to_chat_message(const InputMessage& m);

}  // namespace hichat::api
