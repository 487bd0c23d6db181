// The lexer half of the matcher: a lazily built DFA whose states are sets of (lexeme, lexeme
// automaton state) pairs, i.e. every lexeme the parser allowed at the last boundary that can still
// match the bytes read since. Lexing is greedy: a byte that extends some live lexeme extends it; a
// byte that extends none ends the lexeme (if one is complete) and starts the next. States and
// transitions are interned on first use.
// One per CompiledGrammar, shared by all its matchers. Thread-safe: next() is a lock-free load once
// a transition is known; new states and transitions are added under a mutex. A state's fields never
// change after it is published (its id is returned), and states live in chunks that never move.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hichat::grammar {

class CompiledGrammar;

class LexerStates {
public:
    static constexpr int32_t kDead = -1;

    explicit LexerStates(const CompiledGrammar& grammar);
    ~LexerStates();
    LexerStates(const LexerStates&) = delete;
    LexerStates& operator=(const LexerStates&) = delete;

    // The state before any byte of a lexeme, when `lexemes` (sorted) are allowed; kDead if none.
    int32_t start_state(std::span<const int32_t> lexemes);
    int32_t next(int32_t state, uint8_t byte) { return next_in(row(state), state, byte); }
    // For walks that read many bytes from one state: its transitions (256, kUnknown until computed)
    // looked up once, then next_in(row(state), state, byte) == next(state, byte).
    using Row = const std::atomic<int32_t>*;
    Row row(int32_t state) const { return &chunk(state).trans[slot(state) * 256]; }
    int32_t next_in(Row row, int32_t state, uint8_t byte) {
        const int32_t t = row[byte].load(std::memory_order_acquire);
        return t != kUnknown ? t : compute_next(state, byte);
    }
    bool accepting(int32_t state) const { return !accepted(state).empty(); }
    const std::vector<int32_t>& accepted(int32_t state) const { return chunk(state).accepted[slot(state)]; }  // sorted ids
    int32_t accepted_id(int32_t state) const { return chunk(state).accepted_id[slot(state)]; }  // equal sets, equal ids
    bool has_next(int32_t state) const { return chunk(state).has_next[slot(state)] != 0; }
    int num_states() const { return num_states_.load(std::memory_order_acquire); }
    // The state's content as bytes (its sorted pairs).
    std::string key(int32_t state) const;
    // The lexemes of the state's pairs as bytes: states of one family can be look-alikes.
    std::string family(int32_t state) const;
    // How far `state` and the state whose key() is other_key behave the same (the least
    // LexemeDfa::agreeing_depth of their pairs, capped at max_depth); 0 unless they are one family.
    int agreeing_depth(int32_t state, std::string_view other_key, int max_depth) const;
    // The accepted_id of a set of lexemes (sorted), interned if new.
    int32_t accepted_id_of(const std::vector<int32_t>& lexemes);

    // The slicer's test. Returns r >= 0 when, from `state`, every plain string of at most r
    // characters (TokenizerInfo::plain_chars; r capped at max_chars) reads every byte inside the
    // lexeme, and every longer plain string dies without completing a lexeme (no lexeme boundary
    // inside a plain token); -1 when neither holds (the slicer does not apply).
    int plain_run(int32_t state, int max_chars);

private:
    static constexpr int32_t kUnknown = -2;
    static constexpr int32_t kMixed = -3;     // plain characters lead to different places
    static constexpr int32_t kPending = -4;   // plain_step not computed yet
    static constexpr int kChunkBits = 8;      // 256 states per chunk
    static constexpr int kChunkStates = 1 << kChunkBits;
    static constexpr int kMaxChunks = 4096;   // at most 1M states
    using Pairs = std::vector<std::pair<int32_t, int32_t>>;  // (lexeme, automaton state), sorted

    struct Chunk {
        Chunk();
        std::atomic<int32_t> trans[kChunkStates * 256];  // kUnknown until computed; inline: one load to a row
        std::array<Pairs, kChunkStates> pairs;
        std::array<std::vector<int32_t>, kChunkStates> accepted;
        std::array<int32_t, kChunkStates> accepted_id{};
        std::array<uint8_t, kChunkStates> has_next{};
        std::array<std::atomic<int32_t>, kChunkStates> plain_step;  // kPending until computed
        std::array<std::atomic<int32_t>, kChunkStates> plain_run;   // kUnknown until computed
    };

    static size_t slot(int32_t state) { return static_cast<size_t>(state) & (kChunkStates - 1); }
    Chunk& chunk(int32_t state) const { return *chunks_[static_cast<size_t>(state) >> kChunkBits].load(std::memory_order_acquire); }
    int32_t intern_locked(Pairs pairs);
    int32_t compute_next(int32_t state, uint8_t byte);
    // The one state every plain character leads to from `state`, kDead if every one dies without a
    // lexeme boundary, else kMixed.
    int32_t plain_step(int32_t state);
    // plain_step of one (lexeme, automaton state) pair, memoised: the one automaton state every
    // plain character leads to, kDead if the first byte of every one kills it, else kMixed.
    int32_t pair_plain_step(int32_t lexeme, int32_t s);
    int plain_run_capped(int32_t state);
    static constexpr int kRunCap = 256;  // plain_run memo: longer runs count as unbounded

    const CompiledGrammar& g_;
    std::mutex mu_;  // guards the maps and the creation of states
    std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
    std::atomic<int32_t> num_states_{0};
    std::unordered_map<std::string, int32_t> ids_;
    std::unordered_map<std::string, int32_t> accepted_ids_;
    std::vector<std::unique_ptr<std::atomic<int32_t>[]>> pair_plain_step_;  // [lexeme][automaton state], kPending
};

}  // namespace hichat::grammar
