// What Tokenizer takes from tokenizer_config.json and generation_config.json (both optional).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/added_vocabulary.h"

namespace hichat::tokenizer {

struct TokenizerConfig {
    std::optional<bool> add_bos_token;  // used when tokenizer.json has no TemplateProcessing
    std::optional<bool> add_eos_token;
    std::string bos_token;              // "" if unset or null
    std::string eos_token;
    std::vector<std::string> additional_special_tokens;
    std::vector<AddedToken> added_tokens_decoder;  // "added_tokens_decoder" entries, by id
    std::vector<int32_t> generation_eos_ids;       // generation_config.json "eos_token_id"
};

// Reads dir/tokenizer_config.json and dir/generation_config.json; a missing file leaves the
// defaults. Errors: kInvalidArgument naming the file for bad JSON or wrongly typed fields.
Result<TokenizerConfig> load_tokenizer_config(const std::string& dir);

}  // namespace hichat::tokenizer
