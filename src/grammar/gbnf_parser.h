// parse_gbnf: llama.cpp's GBNF grammar syntax -> GrammarIr (docs/grammar.md). Each character of
// a literal and each character class is one lexeme of one code point, so the grammar keeps
// GBNF's character-level meaning exactly. Errors (kInvalidArgument) give line and column:
// "gbnf: undefined rule 'value' at line 2, column 12". Any thread (pure).
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_ir.h"

namespace hichat::grammar {

Result<GrammarIr> parse_gbnf(std::string_view text, const CompileLimits& limits);

}  // namespace hichat::grammar
