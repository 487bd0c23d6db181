#pragma once
#include <string>
#include <vector>

#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tools {
// The ids that end a generation: generation_config.json's eos_token_id if the folder has one, else
// config.json's, else the tokenizer's EOS. Unreadable generation_config.json is ignored.
std::vector<int32_t> stop_token_ids(const std::string& model_dir, const model::ModelConfig& cfg,
                                    const tokenizer::Tokenizer& tok);
}  // namespace hichat::tools
