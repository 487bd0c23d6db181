#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/tokenizer_parts.h"
#include "tokenizer/utf8.h"

namespace hichat::tokenizer {

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& dir) {
    if (!std::filesystem::is_directory(dir)) return not_found(dir + ": not a directory");
    auto config = load_tokenizer_config(dir);
    if (!config.ok()) return config.status();
    auto parts = std::make_unique<TokenizerParts>();
    const std::string json_path = dir + "/tokenizer.json";
    const std::string model_path = dir + "/tokenizer.model";
    if (std::filesystem::exists(json_path)) {
        HICHAT_RETURN_IF_ERROR(load_tokenizer_json_parts(json_path, config.value(), *parts));
    } else if (std::filesystem::exists(model_path)) {
        HICHAT_RETURN_IF_ERROR(load_sentencepiece_parts(model_path, config.value(), *parts));
    } else {
        return not_found(dir + ": has neither tokenizer.json nor tokenizer.model");
    }
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(parts)));
}

Tokenizer::Tokenizer(std::unique_ptr<const TokenizerParts> parts) : parts_(std::move(parts)) {}
Tokenizer::~Tokenizer() = default;

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(parts_->id_to_token.size()); }
int32_t Tokenizer::bos_id() const { return parts_->bos_id; }
std::vector<int32_t> Tokenizer::eos_ids() const { return parts_->eos_ids; }

void Tokenizer::decode_append(int32_t id, DecodeState& state, std::string& out) const {
    parts_->decoder.append(id, state, out);
}

void Tokenizer::decode_finish(DecodeState& state, std::string& out) const { parts_->decoder.finish(state, out); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens, bool parse_special) const {
    std::string repaired;
    if (!is_valid_utf8(text)) {
        repaired = to_valid_utf8(text);
        text = repaired;
    }
    std::vector<int32_t> ids;
    if (add_special_tokens) ids = parts_->prefix_ids;
    std::vector<AddedVocabulary::Section> sections;
    parts_->added.split(text, parse_special, sections);
    for (size_t i = 0; i < sections.size(); ++i) {
        if (sections[i].id >= 0) ids.push_back(sections[i].id);
        else encode_section(sections[i].text, i, ids);
    }
    if (add_special_tokens) ids.insert(ids.end(), parts_->suffix_ids.begin(), parts_->suffix_ids.end());
    return ids;
}

void Tokenizer::encode_section(std::string_view text, size_t section_index, std::vector<int32_t>& ids) const {
    if (parts_->spm != nullptr) {
        parts_->spm->encode(text, ids);
        return;
    }
    std::string normalized;
    if (!parts_->normalizer.empty()) {
        normalized = parts_->normalizer.normalize(text);
        text = normalized;
    }
    if (text.empty()) return;
    parts_->pre_tokenizer.pre_tokenize(text, section_index,
                                      [&](std::string_view word) { parts_->bpe->encode_word(word, ids); });
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
    DecodeState state;
    std::string out;
    for (const int32_t id : ids) {
        if (skip_special_tokens && is_special(id)) continue;
        parts_->decoder.append(id, state, out);
    }
    parts_->decoder.finish(state, out);
    return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
    auto it = parts_->token_to_id.find(token);
    if (it == parts_->token_to_id.end()) return std::nullopt;
    return it->second;
}

std::string Tokenizer::id_to_token(int32_t id) const {
    if (id < 0 || id >= vocab_size()) return {};
    return parts_->id_to_token[id];
}

std::string Tokenizer::token_bytes(int32_t id) const { return std::string(parts_->decoder.piece(id)); }

bool Tokenizer::is_special(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < parts_->is_special.size() && parts_->is_special[id];
}

}  // namespace hichat::tokenizer
