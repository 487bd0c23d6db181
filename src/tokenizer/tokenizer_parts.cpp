#include "tokenizer/tokenizer_parts.h"

#include <algorithm>

#include "tokenizer/tokenizer_config.h"

namespace hichat::tokenizer {

void set_token(TokenizerParts& parts, int32_t id, const std::string& text) {
    if (static_cast<size_t>(id) >= parts.id_to_token.size()) parts.id_to_token.resize(id + 1);
    parts.id_to_token[id] = text;
    parts.token_to_id[text] = id;
}

namespace {

int32_t find_id(const TokenizerParts& parts, const std::string& token) {
    if (token.empty()) return -1;
    auto it = parts.token_to_id.find(token);
    return it == parts.token_to_id.end() ? -1 : it->second;
}

}  // namespace

Status finish_tokenizer_parts(const TokenizerConfig& config, std::vector<AddedToken> added, bool default_add_bos,
                              TokenizerParts& parts) {
    for (const AddedToken& token : config.added_tokens_decoder) {
        const bool known = std::any_of(added.begin(), added.end(), [&](const AddedToken& a) {
            return a.id == token.id || a.content == token.content;
        });
        if (!known) added.push_back(token);
    }
    for (const AddedToken& token : added) {
        if (token.id < 0) return invalid_argument("added token \"" + token.content + "\" has a negative id");
        set_token(parts, token.id, token.content);
    }
    parts.is_special.assign(parts.id_to_token.size(), false);
    for (const AddedToken& token : added) parts.is_special[token.id] = token.special;
    for (const std::string& token : config.additional_special_tokens) {
        if (const int32_t id = find_id(parts, token); id >= 0) parts.is_special[id] = true;
    }
    parts.added = AddedVocabulary(std::move(added));

    parts.bos_id = find_id(parts, config.bos_token);
    if (parts.bos_id < 0 && config.bos_token.empty() && !parts.prefix_ids.empty()) parts.bos_id = parts.prefix_ids.front();
    if (const int32_t eos = find_id(parts, config.eos_token); eos >= 0) parts.eos_ids.push_back(eos);
    for (const int32_t id : config.generation_eos_ids) {
        if (std::find(parts.eos_ids.begin(), parts.eos_ids.end(), id) == parts.eos_ids.end()) parts.eos_ids.push_back(id);
    }
    if (!parts.has_template) {
        if (config.add_bos_token.value_or(default_add_bos) && parts.bos_id >= 0) parts.prefix_ids = {parts.bos_id};
        if (config.add_eos_token.value_or(false) && !parts.eos_ids.empty()) parts.suffix_ids = {parts.eos_ids.front()};
    }
    return ok_status();
}

}  // namespace hichat::tokenizer
