// The source rewrite @huggingface/jinja's Template applies before lexing, reproduced byte for byte:
// drop one trailing newline, lstrip_blocks and trim_blocks (both on, as transformers renders), and
// remove transformers' {% generation %} / {% endgeneration %} markers.
// Like the reference it works on raw text with regular-expression rules, so it also touches tag-like
// text inside string literals; that quirk is part of matching the reference.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hichat::tokenizer::jinja {

struct PreprocessedSource {
    std::string text;
    std::vector<uint32_t> offsets;  // [text.size()] byte offset in the original source of each byte
};

PreprocessedSource preprocess(std::string_view source);

}  // namespace hichat::tokenizer::jinja
