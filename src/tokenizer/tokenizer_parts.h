// Everything a loaded tokenizer consists of; filled by one of the loaders (tokenizer.json or
// tokenizer.model) and then owned, immutable, by Tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/string_map.h"
#include "tokenizer/token_decoder.h"

namespace hichat::tokenizer {

struct TokenizerParts {
    AddedVocabulary added;
    Normalizer normalizer;
    PreTokenizer pre_tokenizer;
    std::unique_ptr<BpeModel> bpe;                  // tokenizer.json path
    std::unique_ptr<SentencePieceModel> spm;        // tokenizer.model path (then bpe is null)
    std::vector<int32_t> prefix_ids;                // [num_prefix] post-processor, e.g. BOS
    std::vector<int32_t> suffix_ids;                // [num_suffix] e.g. EOS
    bool has_template = false;                      // the post-processor adds tokens itself
    TokenDecoder decoder;
    std::vector<std::string> id_to_token;           // [vocab_size] "" for unused ids
    StringMap<int32_t> token_to_id;
    std::vector<bool> is_special;                   // [vocab_size]
    int32_t bos_id = -1;
    std::vector<int32_t> eos_ids;
};

}  // namespace hichat::tokenizer

namespace hichat::tokenizer {

struct TokenizerConfig;

// Records token text for id (growing id_to_token) and in token_to_id.
void set_token(TokenizerParts& parts, int32_t id, const std::string& text);

// The steps both loaders share once the model is in place: adds the added tokens (those of
// tokenizer_config.json's added_tokens_decoder too), marks special ids, resolves BOS/EOS, and
// applies add_bos_token/add_eos_token when there is no template post-processor. default_add_bos
// is used when tokenizer_config.json does not say. Errors: kInvalidArgument for a negative id.
Status finish_tokenizer_parts(const TokenizerConfig& config, std::vector<AddedToken> added, bool default_add_bos,
                              TokenizerParts& parts);

}  // namespace hichat::tokenizer
