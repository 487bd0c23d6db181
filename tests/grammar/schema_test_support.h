// Feeding text to a compiled grammar byte by byte (the byte vocabulary), for schema tests.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "test_vocab.h"

namespace hichat::grammar::test {

inline bool accepts_bytewise(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
    static const auto vocab = byte_vocab();
    GrammarMatcher m(g, vocab);
    for (char c : text) {
        if (!m.accept_bytes(std::string_view(&c, 1))) return false;
    }
    return m.is_accepting();
}

}  // namespace hichat::grammar::test
