#include "stop_tokens.h"

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace hichat::tools {

std::vector<int32_t> stop_token_ids(const std::string& model_dir, const model::ModelConfig& cfg,
                                    const tokenizer::Tokenizer& tok) {
    std::vector<int32_t> ids;
    auto text = read_file(model_dir + "/generation_config.json");
    if (text.ok()) {
        auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.contains("eos_token_id")) {
            const auto& e = j["eos_token_id"];
            if (e.is_number_integer()) ids.push_back(e.get<int32_t>());
            if (e.is_array()) {
                for (const auto& v : e) {
                    if (v.is_number_integer()) ids.push_back(v.get<int32_t>());
                }
            }
        }
    }
    if (ids.empty()) ids.assign(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end());
    if (ids.empty()) ids = tok.eos_ids();
    return ids;
}

}  // namespace hichat::tools
