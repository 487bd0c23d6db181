// ConstrainedDecoding: turns a request's response_format / grammar into the engine's compiled grammar
// and the model's grammar vocabulary. Grammars are compiled on the calling (preprocessing) thread and
// cached (grammar::GrammarCache); the vocabulary (every token's bytes, the EOS and special ids) is
// built once, on the first request that needs it. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "grammar/grammar_cache.h"
#include "grammar/tokenizer_info.h"
#include "tokenizer/tokenizer.h"

namespace hichat::api {

// What a request asked for: a JSON Schema (response_format json_schema), any JSON object (json_object)
// or a GBNF grammar (the `grammar` extension, as llama.cpp). `param` names the field for errors.
struct GrammarSpec {
    grammar::GrammarKind kind = grammar::GrammarKind::kJsonObject;
    std::string text;  // the schema's JSON text, or the GBNF source
    bool strict = false;
    std::string param;
    std::optional<grammar::JsonFrame> frame;  // tool calls: the values framed by the format's text
};

class ConstrainedDecoding {
public:
    // Schemas nested deeper are refused (a 400): real ones stay far below, and compile time grows with it.
    static constexpr int kMaxSchemaDepth = 32;

    // vocab_size: the model's logits width; eos_ids: the ids that end a sequence.
    ConstrainedDecoding(const tokenizer::Tokenizer& tokenizer, int vocab_size, std::vector<int32_t> eos_ids);

    struct Compiled {
        std::shared_ptr<const grammar::CompiledGrammar> grammar;
        std::shared_ptr<const grammar::TokenizerInfo> vocab;
    };
    // A 400 naming spec.param when the schema or grammar does not compile (unsupported keyword,
    // syntax error, too large or too deep).
    std::optional<ApiError> compile(const GrammarSpec& spec, Compiled& out);

private:
    std::shared_ptr<const grammar::TokenizerInfo> vocab();

    const tokenizer::Tokenizer& tokenizer_;
    int vocab_size_;
    std::vector<int32_t> eos_ids_;
    grammar::GrammarCache cache_;
    std::once_flag vocab_once_;
    std::shared_ptr<const grammar::TokenizerInfo> vocab_;
    std::string vocab_error_;
};

}  // namespace hichat::api
