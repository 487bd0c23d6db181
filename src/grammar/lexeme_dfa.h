// The deterministic automaton of one lexeme over bytes: the strings matching every regex of
// `all_of`, none of `none_of`, and not empty. Built at compile time (subset construction, then
// pruning of states that cannot reach an accepting one, then Hopcroft minimisation (dfa_minimizer.h)), immutable after.
// Any thread (immutable).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "grammar/regex.h"

namespace hichat::grammar {

struct LexemeSpec {
    std::vector<Regex> all_of;   // at least one
    std::vector<Regex> none_of;  // e.g. the declared property names, for additional keys
};

class LexemeDfa {
public:
    static constexpr int32_t kDead = -1;

    // max_states bounds each automaton built on the way; deadline bounds the time.
    // Errors: kInvalidArgument "lexeme automaton over N states" / "time budget".
    static Result<LexemeDfa> build(const LexemeSpec& spec, int max_states,
                                   std::chrono::steady_clock::time_point deadline);

    int32_t start() const { return start_; }  // kDead when the language is empty
    int32_t next(int32_t state, uint8_t byte) const { return next_[state * num_classes_ + class_of_[byte]]; }
    bool accepting(int32_t state) const { return accepting_[state]; }
    bool has_next(int32_t state) const { return has_next_[state]; }  // some byte leads on
    int num_states() const { return static_cast<int>(accepting_.size()); }
    bool matches(std::string_view bytes) const;
    // The largest d <= max_depth such that from a and from b every string of at most d bytes leaves
    // both alive or both dead, and every string of fewer than d bytes both accepting or neither:
    // how far two look-alike states (say two positions of a long bounded count) behave the same.
    int agreeing_depth(int32_t a, int32_t b, int max_depth) const;

private:
    std::array<uint8_t, 256> class_of_{};
    int num_classes_ = 1;
    std::vector<int32_t> next_;      // [num_states * num_classes]
    std::vector<uint8_t> accepting_;  // [num_states]
    std::vector<uint8_t> has_next_;   // [num_states]
    int32_t start_ = kDead;

    friend class DfaBuilder;
};

}  // namespace hichat::grammar
