// The normalizer step of tokenizer.json: a list of text rewrites applied to each non-added-token
// section before pre-tokenization. Immutable after construction; any thread may call normalize().
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace hichat::tokenizer {

class Normalizer {
public:
    // Parses tokenizer.json's "normalizer" (null, a step, or a Sequence of steps).
    // Supported: NFC, NFD, NFKC, NFKD, Prepend, Replace (String or Regex pattern), Lowercase, Sequence.
    // Errors: kUnimplemented for other types, kInvalidArgument for malformed steps.
    static Result<Normalizer> from_json(const nlohmann::json& config);

    bool empty() const { return steps_.empty(); }
    // text is valid UTF-8; so is the result.
    std::string normalize(std::string_view text) const;

private:
    enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kPrepend, kReplace, kLowercase };
    struct Step {
        Kind kind;
        std::string text;              // Prepend: prefix; Replace: replacement
        std::shared_ptr<Regex> regex;  // Replace: the pattern
    };
    static Status add_steps(const nlohmann::json& config, std::vector<Step>& steps);

    std::vector<Step> steps_;
};

// Replaces every non-overlapping match of regex in text by replacement.
std::string replace_all(const Regex& regex, std::string_view text, std::string_view replacement);

}  // namespace hichat::tokenizer
