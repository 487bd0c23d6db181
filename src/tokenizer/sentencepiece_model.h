// A SentencePiece tokenizer.model, encoded through libsentencepiece. Immutable after load; any
// thread may call encode().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace hichat::tokenizer {

struct TokenizerConfig;
struct TokenizerParts;

class SentencePieceModel {
public:
    // Errors: kNotFound if path is missing, kInvalidArgument naming the file if it does not parse.
    static Result<std::unique_ptr<SentencePieceModel>> load(const std::string& path);
    ~SentencePieceModel();

    // Appends the ids of one section of plain text (no added tokens inside).
    void encode(std::string_view text, std::vector<int32_t>& ids) const;

    int32_t num_pieces() const;
    std::string piece(int32_t id) const;
    bool is_control(int32_t id) const;
    bool is_unknown(int32_t id) const;
    int32_t bos_id() const;
    int32_t eos_id() const;

private:
    explicit SentencePieceModel(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor);
    std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

// Fills parts from dir/tokenizer.model: control and user-defined pieces become added tokens,
// BOS is added unless tokenizer_config.json says add_bos_token false, and decoding follows the
// Llama recipe (metaspace to space, byte pieces to bytes, one leading space stripped).
Status load_sentencepiece_parts(const std::string& path, const TokenizerConfig& config, TokenizerParts& parts);

}  // namespace hichat::tokenizer
