#include "model_files.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace hichat::tools {
namespace {

// bos_token / eos_token are a string or an AddedToken object {"content": ...}.
std::string token_string(const nlohmann::json& config, const char* name) {
    auto it = config.find(name);
    if (it == config.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"];
    return "";
}

std::optional<std::string> template_source(const nlohmann::json& config) {
    auto it = config.find("chat_template");
    if (it == config.end() || it->is_null()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array()) {
        for (const auto& t : *it) {
            if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string()) {
                return t["template"].get<std::string>();
            }
        }
    }
    return std::nullopt;
}

}  // namespace

Result<ChatTemplateFiles> load_chat_template(const std::string& model_dir) {
    ChatTemplateFiles out;
    const std::string config_path = model_dir + "/tokenizer_config.json";
    std::optional<std::string> source;
    std::string source_file = config_path;
    if (std::filesystem::exists(config_path)) {
        auto text = read_file(config_path);
        HICHAT_RETURN_IF_ERROR(text.status());
        auto config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
        if (config.is_discarded() || !config.is_object()) return invalid_argument(config_path + ": not a JSON object");
        out.bos_token = token_string(config, "bos_token");
        out.eos_token = token_string(config, "eos_token");
        source = template_source(config);
    }
    const std::string jinja_path = model_dir + "/chat_template.jinja";
    if (!source && std::filesystem::exists(jinja_path)) {
        auto text = read_file(jinja_path);
        HICHAT_RETURN_IF_ERROR(text.status());
        source = *text;
        source_file = jinja_path;
    }
    if (!source) return out;
    auto parsed = tokenizer::ChatTemplate::parse(*source);
    if (!parsed.ok()) return invalid_argument(source_file + ": chat_template: " + parsed.status().message());
    out.chat_template = std::move(parsed).value();
    out.source = std::move(*source);
    return out;
}

}  // namespace hichat::tools
