#include "api/constrained_decoding.h"

#include <algorithm>

namespace hichat::api {

ConstrainedDecoding::ConstrainedDecoding(const tokenizer::Tokenizer& tokenizer, int vocab_size,
                                         std::vector<int32_t> eos_ids)
    : tokenizer_(tokenizer), vocab_size_(vocab_size), eos_ids_(std::move(eos_ids)) {}

std::shared_ptr<const grammar::TokenizerInfo> ConstrainedDecoding::vocab() {
    std::call_once(vocab_once_, [this] {
        const int32_t n = std::min(tokenizer_.vocab_size(), vocab_size_);
        std::vector<std::string> bytes(static_cast<size_t>(n));
        std::vector<int32_t> special;
        for (int32_t id = 0; id < n; ++id) {
            if (tokenizer_.is_special(id)) {
                special.push_back(id);
            } else {
                bytes[static_cast<size_t>(id)] = tokenizer_.token_bytes(id);
            }
        }
        std::vector<int32_t> eos;
        for (int32_t id : eos_ids_) {
            if (id >= 0 && id < n) eos.push_back(id);
        }
        std::erase_if(special, [&](int32_t id) { return std::find(eos.begin(), eos.end(), id) != eos.end(); });
        auto info = grammar::TokenizerInfo::create(std::move(bytes), std::move(eos), std::move(special), vocab_size_);
        if (info.ok()) {
            vocab_ = std::move(info).value();
        } else {
            vocab_error_ = info.status().message();
        }
    });
    return vocab_;
}

std::optional<ApiError> ConstrainedDecoding::compile(const GrammarSpec& spec, Compiled& out) {
    out.vocab = vocab();
    if (!out.vocab) {
        return ApiError{.http_status = 500, .message = "the model's vocabulary cannot drive a grammar: " + vocab_error_,
                        .type = "server_error", .param = spec.param};
    }
    grammar::JsonSchemaOptions options;
    options.strict_additional_properties = spec.strict;
    options.frame = spec.frame;
    options.limits.max_nesting_depth = kMaxSchemaDepth;
    auto compiled = cache_.get(spec.kind, spec.text, options);
    if (!compiled.ok()) {
        ApiError e = bad_field(spec.param, spec.param + ": " + compiled.status().message());
        e.code = spec.kind == grammar::GrammarKind::kGbnf ? "invalid_grammar" : "invalid_schema";
        return e;
    }
    out.grammar = std::move(compiled).value();
    return std::nullopt;
}

}  // namespace hichat::api
