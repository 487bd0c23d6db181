// Loading a Hugging Face tokenizer.json into TokenizerParts.
#pragma once

#include <string>

#include "base/status.h"

namespace hichat::tokenizer {

struct TokenizerConfig;
struct TokenizerParts;

// Errors (each message starts with path): kNotFound, kInvalidArgument for bad JSON or malformed
// fields, kUnimplemented for components we do not support (e.g. a WordPiece model).
Status load_tokenizer_json_parts(const std::string& path, const TokenizerConfig& config, TokenizerParts& parts);

}  // namespace hichat::tokenizer
