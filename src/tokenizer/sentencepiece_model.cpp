#include "tokenizer/sentencepiece_model.h"

#include <filesystem>

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_parts.h"

namespace hichat::tokenizer {

Result<std::unique_ptr<SentencePieceModel>> SentencePieceModel::load(const std::string& path) {
    if (!std::filesystem::exists(path)) return not_found(path + ": no such file");
    auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = processor->Load(path);
    if (!status.ok()) return invalid_argument(path + ": not a SentencePiece model: " + status.ToString());
    return std::unique_ptr<SentencePieceModel>(new SentencePieceModel(std::move(processor)));
}

SentencePieceModel::SentencePieceModel(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor)
    : processor_(std::move(processor)) {}

SentencePieceModel::~SentencePieceModel() = default;

void SentencePieceModel::encode(std::string_view text, std::vector<int32_t>& ids) const {
    std::vector<int> piece_ids;
    // Encode only fails on an unloaded model, which load() rules out.
    if (!processor_->Encode(text, &piece_ids).ok()) return;
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
}

int32_t SentencePieceModel::num_pieces() const { return processor_->GetPieceSize(); }
std::string SentencePieceModel::piece(int32_t id) const { return processor_->IdToPiece(id); }
bool SentencePieceModel::is_control(int32_t id) const { return processor_->IsControl(id); }
bool SentencePieceModel::is_unknown(int32_t id) const { return processor_->IsUnknown(id); }
int32_t SentencePieceModel::bos_id() const { return processor_->bos_id(); }
int32_t SentencePieceModel::eos_id() const { return processor_->eos_id(); }

Status load_sentencepiece_parts(const std::string& path, const TokenizerConfig& config, TokenizerParts& parts) {
    auto model = SentencePieceModel::load(path);
    if (!model.ok()) return model.status();
    parts.spm = std::move(model).value();
    const SentencePieceModel& spm = *parts.spm;
    std::vector<AddedToken> added;
    for (int32_t id = 0; id < spm.num_pieces(); ++id) {
        set_token(parts, id, spm.piece(id));
        // Control pieces (<s>, </s>) and <unk> are not produced from text by SentencePiece; like
        // the Hugging Face conversion, they become special added tokens recognised in text.
        if (spm.is_control(id) || spm.is_unknown(id)) added.push_back(AddedToken{id, spm.piece(id), /*special=*/true});
    }
    TokenizerConfig spm_config = config;
    if (spm_config.bos_token.empty() && spm.bos_id() >= 0) spm_config.bos_token = spm.piece(spm.bos_id());
    if (spm_config.eos_token.empty() && spm.eos_id() >= 0) spm_config.eos_token = spm.piece(spm.eos_id());
    HICHAT_RETURN_IF_ERROR(finish_tokenizer_parts(spm_config, std::move(added), /*default_add_bos=*/true, parts));

    const nlohmann::json decoder = nlohmann::json::parse(R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
    std::vector<bool> is_added(parts.id_to_token.size(), false);
    for (const AddedToken& token : parts.added.tokens()) is_added[token.id] = true;
    auto token_decoder = TokenDecoder::from_json(decoder, parts.id_to_token, is_added);
    if (!token_decoder.ok()) return token_decoder.status();
    parts.decoder = std::move(token_decoder).value();
    return ok_status();
}

}  // namespace hichat::tokenizer
