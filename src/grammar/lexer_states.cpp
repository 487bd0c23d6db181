#include "grammar/lexer_states.h"

namespace hichat::grammar {

int32_t LexerStates::intern(Pairs pairs) {
    if (pairs.empty()) return kDead;
    std::string key(reinterpret_cast<const char*>(pairs.data()), pairs.size() * sizeof(pairs[0]));
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<int32_t>(pairs_.size());
    std::vector<int32_t> acc;
    bool more = false;
    for (auto [lex, s] : pairs) {
        const LexemeDfa& d = g_.lexeme(lex);
        if (d.accepting(s)) acc.push_back(lex);
        more = more || d.has_next(s);
    }
    std::string acc_key(reinterpret_cast<const char*>(acc.data()), acc.size() * sizeof(acc[0]));
    accepted_id_.push_back(accepted_ids_.emplace(std::move(acc_key), static_cast<int32_t>(accepted_ids_.size())).first->second);
    accepted_.push_back(std::move(acc));
    has_next_.push_back(more);
    pairs_.push_back(std::move(pairs));
    trans_.resize(trans_.size() + 256, kUnknown);
    ids_.emplace(std::move(key), id);
    return id;
}

int32_t LexerStates::start_state(std::span<const int32_t> lexemes) {
    Pairs pairs;
    for (int32_t lex : lexemes) {
        const int32_t s = g_.lexeme(lex).start();
        if (s >= 0) pairs.emplace_back(lex, s);
    }
    return intern(std::move(pairs));
}

int32_t LexerStates::compute_next(int32_t state, uint8_t byte) {
    Pairs next;
    for (auto [lex, s] : pairs_[state]) {
        const int32_t t = g_.lexeme(lex).next(s, byte);
        if (t >= 0) next.emplace_back(lex, t);
    }
    const int32_t id = intern(std::move(next));
    trans_[static_cast<size_t>(state) * 256 + byte] = id;
    return id;
}

}  // namespace hichat::grammar
