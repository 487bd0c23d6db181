// The lexer half of the matcher: a lazily built DFA whose states are sets of (lexeme, lexeme
// automaton state) pairs, i.e. every lexeme the parser allowed at the last boundary that can still
// match the bytes read since. Lexing is greedy: a byte that extends some live lexeme extends it; a
// byte that extends none ends the lexeme (if one is complete) and starts the next. States and
// transitions are interned on first use. Owned by one matcher; one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace hichat::grammar {

class LexerStates {
public:
    static constexpr int32_t kDead = -1;

    explicit LexerStates(const CompiledGrammar& grammar) : g_(grammar) {}

    // The state before any byte of a lexeme, when `lexemes` (sorted) are allowed; kDead if none.
    int32_t start_state(std::span<const int32_t> lexemes);
    int32_t next(int32_t state, uint8_t byte) {
        const int32_t t = trans_[static_cast<size_t>(state) * 256 + byte];
        return t != kUnknown ? t : compute_next(state, byte);
    }
    bool accepting(int32_t state) const { return !accepted_[state].empty(); }
    const std::vector<int32_t>& accepted(int32_t state) const { return accepted_[state]; }  // sorted lexeme ids
    int32_t accepted_id(int32_t state) const { return accepted_id_[state]; }  // equal sets, equal ids
    bool has_next(int32_t state) const { return has_next_[state] != 0; }
    int num_states() const { return static_cast<int>(accepted_.size()); }
    // The state's content as bytes: equal in every LexerStates of the same grammar.
    std::string key(int32_t state) const;
    // The accepted_id of a set of lexemes (sorted), interned if new.
    int32_t accepted_id_of(const std::vector<int32_t>& lexemes);

    // The slicer's test. Returns r >= 0 when, from `state`, every plain string of at most r
    // characters (TokenizerInfo::plain_chars; r capped at max_chars) reads every byte inside the
    // lexeme, and every longer plain string dies without completing a lexeme (no lexeme boundary
    // inside a plain token); -1 when neither holds (the slicer does not apply). Results are memoised:
    // max_chars must be the same on every call.
    int plain_run(int32_t state, int max_chars);

private:
    static constexpr int32_t kUnknown = -2;
    using Pairs = std::vector<std::pair<int32_t, int32_t>>;  // (lexeme, automaton state), sorted

    static constexpr int32_t kMixed = -3;   // plain characters lead to different places
    static constexpr int32_t kPending = -4;  // plain_step_ not computed yet

    int32_t intern(Pairs pairs);
    int32_t compute_next(int32_t state, uint8_t byte);
    // The one state every plain character leads to from `state`, kDead if every one dies without a
    // lexeme boundary, else kMixed.
    int32_t plain_step(int32_t state);
    int32_t plain_step_utf8(int32_t state);

    const CompiledGrammar& g_;
    std::vector<Pairs> pairs_;
    std::vector<std::vector<int32_t>> accepted_;
    std::vector<int32_t> accepted_id_;
    std::vector<uint8_t> has_next_;
    std::vector<int32_t> trans_;  // [num_states * 256], kUnknown until computed
    std::vector<int32_t> plain_step_;  // [num_states] kPending until computed
    std::vector<int32_t> plain_run_;   // [num_states] -2 until computed (for one max_chars)
    std::unordered_map<std::string, int32_t> ids_;
    std::unordered_map<std::string, int32_t> accepted_ids_;
};

}  // namespace hichat::grammar
