#include "tokenizer/tokenizer_config.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace hichat::tokenizer {
namespace {

using nlohmann::json;

// A token field is a string, null, or an AddedToken object {"content": ...}.
Result<std::string> token_string(const json& value, const std::string& field) {
    if (value.is_null()) return std::string();
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string()) {
        return value["content"].get<std::string>();
    }
    return invalid_argument("\"" + field + "\" must be a string, null or {\"content\": ...}");
}

Status parse_tokenizer_config(const json& j, TokenizerConfig& config) {
    if (!j.is_object()) return invalid_argument("top level must be an object");
    for (const char* field : {"add_bos_token", "add_eos_token"}) {
        auto it = j.find(field);
        if (it == j.end() || it->is_null()) continue;
        if (!it->is_boolean()) return invalid_argument(std::string("\"") + field + "\" must be a boolean");
        (std::string(field) == "add_bos_token" ? config.add_bos_token : config.add_eos_token) = it->get<bool>();
    }
    for (const char* field : {"bos_token", "eos_token"}) {
        if (!j.contains(field)) continue;
        auto value = token_string(j[field], field);
        if (!value.ok()) return value.status();
        (std::string(field) == "bos_token" ? config.bos_token : config.eos_token) = value.value();
    }
    if (auto it = j.find("additional_special_tokens"); it != j.end() && !it->is_null()) {
        if (!it->is_array()) return invalid_argument("\"additional_special_tokens\" must be an array");
        for (const auto& item : *it) {
            auto value = token_string(item, "additional_special_tokens");
            if (!value.ok()) return value.status();
            config.additional_special_tokens.push_back(value.value());
        }
    }
    if (auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object()) {
        for (const auto& [key, item] : it->items()) {
            AddedToken token;
            try {
                token.id = std::stoi(key);
            } catch (const std::exception&) {
                return invalid_argument("\"added_tokens_decoder\" key \"" + key + "\" is not an id");
            }
            auto content = token_string(item, "added_tokens_decoder");
            if (!content.ok() || content.value().empty()) {
                return invalid_argument("\"added_tokens_decoder\" entry " + key + " needs a \"content\"");
            }
            token.content = content.value();
            token.special = item.value("special", false);
            token.lstrip = item.value("lstrip", false);
            token.rstrip = item.value("rstrip", false);
            token.single_word = item.value("single_word", false);
            token.normalized = item.value("normalized", false);
            config.added_tokens_decoder.push_back(std::move(token));
        }
    }
    return ok_status();
}

Status parse_generation_config(const json& j, TokenizerConfig& config) {
    auto it = j.find("eos_token_id");
    if (it == j.end() || it->is_null()) return ok_status();
    if (it->is_number_integer()) {
        config.generation_eos_ids.push_back(it->get<int32_t>());
        return ok_status();
    }
    if (!it->is_array()) return invalid_argument("\"eos_token_id\" must be an id or an array of ids");
    for (const auto& id : *it) {
        if (!id.is_number_integer()) return invalid_argument("\"eos_token_id\" must be an id or an array of ids");
        config.generation_eos_ids.push_back(id.get<int32_t>());
    }
    return ok_status();
}

// Parses path with parse if it exists. Errors name the file.
template <typename Parse>
Status read_optional_json(const std::string& path, TokenizerConfig& config, Parse parse) {
    if (!std::filesystem::exists(path)) return ok_status();
    auto text = read_file(path);
    if (!text.ok()) return text.status();
    try {
        const json j = json::parse(text.value());
        Status status = parse(j, config);
        if (!status.ok()) return invalid_argument(path + ": " + status.message());
    } catch (const json::exception& e) {
        return invalid_argument(path + ": " + e.what());
    }
    return ok_status();
}

}  // namespace

Result<TokenizerConfig> load_tokenizer_config(const std::string& dir) {
    TokenizerConfig config;
    HICHAT_RETURN_IF_ERROR(read_optional_json(dir + "/tokenizer_config.json", config, parse_tokenizer_config));
    HICHAT_RETURN_IF_ERROR(read_optional_json(dir + "/generation_config.json", config, parse_generation_config));
    return config;
}

}  // namespace hichat::tokenizer
