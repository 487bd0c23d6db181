// CompiledGrammar: the immutable result of compiling a JSON Schema, a regex or a GBNF grammar: the
// productions of a context-free grammar whose terminals are lexemes, and one automaton per lexeme.
// Shared by every matcher that uses it (std::shared_ptr<const CompiledGrammar>); any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "grammar/grammar_ir.h"
#include "grammar/lexeme_dfa.h"
#include "grammar/lexer_states.h"
#include "grammar/state_mask_cache.h"

namespace hichat::grammar {

// Caps on what one compilation may take; exceeding one is a kInvalidArgument naming it.
struct CompileLimits {
    size_t max_source_bytes = 512 * 1024;  // schema text (compact dump), regex or grammar text
    int max_nesting_depth = 64;             // schema nesting (subschema inside subschema), regex groups
    int max_repeat = 4096;                  // bounded counts: maxItems, maxLength, {m,n}
    int max_productions = 200000;           // after lowering
    int max_lexeme_states = 20000;          // one lexeme's automaton
    int max_total_lexeme_states = 400000;   // all lexemes together
    int time_budget_ms = 2000;              // wall time of one compilation

    std::chrono::steady_clock::time_point deadline_from_now() const {
        return std::chrono::steady_clock::now() + std::chrono::milliseconds(time_budget_ms);
    }
};

// A parser symbol: >= 0 a nonterminal, < 0 the lexeme ~symbol (lexeme_symbol(id) = -id - 1).
inline int32_t lexeme_symbol(int32_t lexeme_id) { return -lexeme_id - 1; }
inline int32_t symbol_lexeme(int32_t symbol) { return -symbol - 1; }

struct Production {
    int32_t lhs = 0;
    std::vector<int32_t> rhs;
};

class CompiledGrammar {
public:
    // Lowers the IR (repeats into left-recursive or bounded rules), drops productions that can
    // derive no text, builds the lexeme automata. Errors: undefined rule, limits, time budget.
    static Result<std::shared_ptr<const CompiledGrammar>> from_ir(const GrammarIr& ir, const CompileLimits& limits,
                                                                  std::chrono::steady_clock::time_point deadline);

    // Production 0 is start -> root when the language is not empty; -1 when it is (nothing matches).
    int32_t start_production() const { return start_production_; }
    int32_t start_symbol() const { return start_symbol_; }
    const std::vector<Production>& productions() const { return productions_; }
    std::span<const int32_t> productions_of(int32_t nonterminal) const {
        return {by_lhs_.data() + by_lhs_begin_[nonterminal],
                by_lhs_.data() + by_lhs_begin_[nonterminal + 1]};
    }
    bool nullable(int32_t nonterminal) const { return nullable_[nonterminal]; }
    int num_lexemes() const { return static_cast<int>(lexemes_.size()); }
    const LexemeDfa& lexeme(int32_t id) const { return lexemes_[id]; }
    size_t memory_bytes() const { return memory_bytes_; }  // without the mask caches
    // The lexer states of this grammar, shared by its matchers (thread-safe, grows on use).
    LexerStates& lexer_states() const { return *lexer_states_; }
    // The per-lexer-state mask cache of this grammar over `tokenizer`, shared by its matchers.
    std::shared_ptr<StateMaskCache> mask_cache(const std::shared_ptr<const TokenizerInfo>& tokenizer) const {
        return mask_caches_->for_tokenizer(tokenizer);
    }

private:
    std::vector<Production> productions_;
    std::vector<int32_t> by_lhs_;        // production ids grouped by lhs
    std::vector<int32_t> by_lhs_begin_;  // [num_nonterminals + 1]
    std::vector<uint8_t> nullable_;      // [num_nonterminals]
    std::vector<LexemeDfa> lexemes_;
    int32_t start_production_ = -1;
    int32_t start_symbol_ = 0;
    size_t memory_bytes_ = 0;
    std::unique_ptr<LexerStates> lexer_states_;  // made in from_ir; refers back to *this
    std::unique_ptr<StateMaskCaches> mask_caches_ = std::make_unique<StateMaskCaches>();  // thread-safe

    friend class IrLowering;
};

}  // namespace hichat::grammar
