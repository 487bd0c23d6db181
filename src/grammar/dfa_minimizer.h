// Hopcroft's partition refinement for the lexeme automata: O(classes * n log n), where the Moore
// refinement it replaces needed as many rounds as the longest bounded repeat (maxLength N took N
// rounds, and gave up after 24, leaving such strings unminimised). Any thread (pure function).
#pragma once

#include <cstdint>
#include <vector>

namespace hichat::grammar {

struct TransitionTable {
    std::vector<int32_t> next;        // [num_states * num_classes], -1 = dead
    std::vector<uint8_t> accepting;   // [num_states]
    int num_states() const { return static_cast<int>(accepting.size()); }
};

// The minimal automaton of `dfa`, whose states must all reach an accepting state (pruned). State 0
// (the start) stays state 0; a non-empty input gives a non-empty output.
TransitionTable minimize_dfa(const TransitionTable& dfa, int num_classes);

}  // namespace hichat::grammar
