#include "grammar/lexer_states.h"

#include "base/check.h"
#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <cstring>

namespace hichat::grammar {

LexerStates::Chunk::Chunk() {
    for (auto& t : trans) t.store(kUnknown, std::memory_order_relaxed);
    for (auto& v : plain_step) v.store(kPending, std::memory_order_relaxed);
    for (auto& v : plain_run) v.store(kUnknown, std::memory_order_relaxed);
}

LexerStates::LexerStates(const CompiledGrammar& grammar) : g_(grammar) {
    for (int32_t lex = 0; lex < g_.num_lexemes(); ++lex) {
        const int n = g_.lexeme(lex).num_states();
        auto& memo = pair_plain_step_.emplace_back(new std::atomic<int32_t>[n]);
        for (int i = 0; i < n; ++i) memo[i].store(kPending, std::memory_order_relaxed);
    }
}

LexerStates::~LexerStates() {
    for (auto& c : chunks_) delete c.load(std::memory_order_relaxed);
}

// Caller holds mu_.
int32_t LexerStates::intern_locked(Pairs pairs) {
    if (pairs.empty()) return kDead;
    std::string key(reinterpret_cast<const char*>(pairs.data()), pairs.size() * sizeof(pairs[0]));
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    const int32_t id = num_states_.load(std::memory_order_relaxed);
    CHECK_LT(id, kMaxChunks * kChunkStates) << "lexer states of one grammar";
    if (slot(id) == 0) chunks_[static_cast<size_t>(id) >> kChunkBits].store(new Chunk(), std::memory_order_release);
    Chunk& c = chunk(id);
    std::vector<int32_t> acc;
    bool more = false;
    for (auto [lex, s] : pairs) {
        const LexemeDfa& d = g_.lexeme(lex);
        if (d.accepting(s)) acc.push_back(lex);
        more = more || d.has_next(s);
    }
    std::string acc_key(reinterpret_cast<const char*>(acc.data()), acc.size() * sizeof(acc[0]));
    c.accepted_id[slot(id)] = accepted_ids_.emplace(std::move(acc_key), static_cast<int32_t>(accepted_ids_.size())).first->second;
    c.accepted[slot(id)] = std::move(acc);
    c.has_next[slot(id)] = more;
    c.pairs[slot(id)] = std::move(pairs);
    ids_.emplace(std::move(key), id);
    num_states_.store(id + 1, std::memory_order_release);
    return id;
}

int32_t LexerStates::start_state(std::span<const int32_t> lexemes) {
    Pairs pairs;
    for (int32_t lex : lexemes) {
        const int32_t s = g_.lexeme(lex).start();
        if (s >= 0) pairs.emplace_back(lex, s);
    }
    std::lock_guard lock(mu_);
    return intern_locked(std::move(pairs));
}

int32_t LexerStates::compute_next(int32_t state, uint8_t byte) {
    Pairs next;
    for (auto [lex, s] : chunk(state).pairs[slot(state)]) {
        const int32_t t = g_.lexeme(lex).next(s, byte);
        if (t >= 0) next.emplace_back(lex, t);
    }
    std::lock_guard lock(mu_);
    const int32_t id = intern_locked(std::move(next));
    chunk(state).trans[slot(state) * 256 + byte].store(id, std::memory_order_release);
    return id;
}

}  // namespace hichat::grammar

namespace hichat::grammar {

std::string LexerStates::key(int32_t state) const {
    const Pairs& p = chunk(state).pairs[slot(state)];
    return std::string(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(p[0]));
}

std::string LexerStates::family(int32_t state) const {
    std::string f;
    for (auto [lex, s] : chunk(state).pairs[slot(state)]) f.append(reinterpret_cast<const char*>(&lex), sizeof(lex));
    return f;
}

int LexerStates::agreeing_depth(int32_t state, std::string_view other_key, int max_depth) const {
    const Pairs& pairs = chunk(state).pairs[slot(state)];
    if (other_key.size() != pairs.size() * sizeof(pairs[0])) return 0;
    int depth = max_depth;
    for (size_t i = 0; i < pairs.size() && depth > 0; ++i) {
        int32_t other[2];  // (lexeme, automaton state)
        std::memcpy(other, other_key.data() + i * sizeof(other), sizeof(other));
        if (other[0] != pairs[i].first) return 0;
        depth = std::min(depth, g_.lexeme(other[0]).agreeing_depth(pairs[i].second, other[1], depth));
    }
    return depth;
}

int32_t LexerStates::accepted_id_of(const std::vector<int32_t>& lexemes) {
    std::lock_guard lock(mu_);
    std::string k(reinterpret_cast<const char*>(lexemes.data()), lexemes.size() * sizeof(lexemes[0]));
    return accepted_ids_.emplace(std::move(k), static_cast<int32_t>(accepted_ids_.size())).first->second;
}

namespace {

struct ByteRange {
    uint8_t lo, hi;
};
// Valid UTF-8 sequences of 2-4 bytes, by lead-byte group (as TokenizerInfo::plain_chars takes them).
struct Utf8Group {
    ByteRange bytes[4];
    int len;
};
constexpr Utf8Group kUtf8Groups[] = {
    {{{0xC2, 0xDF}, {0x80, 0xBF}}, 2},
    {{{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}}, 3},
    {{{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}}, 3},
    {{{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}}, 3},
    {{{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}}, 3},
    {{{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}}, 4},
    {{{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}}, 4},
    {{{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}}, 4},
};

// A few automaton states (UTF-8 continuations of a byte range rarely fan out).
constexpr int kMaxSet = 8;
struct StateSet {
    int32_t s[kMaxSet];
    int n = 0;
};

// The automaton states reached from the states `from` by every byte of `range`, without repeats; false if some byte kills one of them or there are more than kMaxSet.
bool step_range(const LexemeDfa& d, const StateSet& from, ByteRange range, StateSet& to) {
    to.n = 0;
    for (int i = 0; i < from.n; ++i) {
        for (int b = range.lo; b <= range.hi; ++b) {
            const int32_t t = d.next(from.s[i], static_cast<uint8_t>(b));
            if (t == LexemeDfa::kDead) return false;
            if (std::find(to.s, to.s + to.n, t) != to.s + to.n) continue;
            if (to.n == kMaxSet) return false;
            to.s[to.n++] = t;
        }
    }
    return true;
}

}  // namespace

// Works on the lexeme's own automaton (no lexer states are made): ASCII plain bytes one by one,
// UTF-8 sequences a byte range at a time. Dying inside a UTF-8 sequence counts as mixed (the
// lexer state would change before it dies), which only makes the slicer give up more often.
int32_t LexerStates::pair_plain_step(int32_t lexeme, int32_t s) {
    std::atomic<int32_t>& memo = pair_plain_step_[lexeme][s];
    if (const int32_t known = memo.load(std::memory_order_acquire); known != kPending) return known;
    const LexemeDfa& d = g_.lexeme(lexeme);
    int32_t result = d.next(s, ' ');
    for (int b = 0x21; b <= 0x7E && result != kMixed; ++b) {
        if (b == '"' || b == '\\') continue;
        if (d.next(s, static_cast<uint8_t>(b)) != result) result = kMixed;
    }
    for (const Utf8Group& g : kUtf8Groups) {
        if (result == kMixed) break;
        if (result == LexemeDfa::kDead) {
            for (int b = g.bytes[0].lo; b <= g.bytes[0].hi && result != kMixed; ++b) {
                if (d.next(s, static_cast<uint8_t>(b)) != LexemeDfa::kDead) result = kMixed;
            }
            continue;
        }
        StateSet cur, nxt;
        cur.s[0] = s;
        cur.n = 1;
        for (int k = 0; k < g.len && result != kMixed; ++k) {
            if (!step_range(d, cur, g.bytes[k], nxt)) result = kMixed;
            cur = nxt;
        }
        if (result != kMixed && (cur.n != 1 || cur.s[0] != result)) result = kMixed;
    }
    memo.store(result, std::memory_order_release);  // a race computes the same value twice
    return result;
}

// From the pairs' own steps: the lexer state after any plain character keeps the pairs that do not
// die at its first byte, each moved to its one next state; any pair that depends on the character
// makes the step mixed.
int32_t LexerStates::plain_step(int32_t state) {
    std::atomic<int32_t>& memo = chunk(state).plain_step[slot(state)];
    if (const int32_t known = memo.load(std::memory_order_acquire); known != kPending) return known;
    int32_t result = kPending;
    Pairs next;
    for (auto [lex, s] : chunk(state).pairs[slot(state)]) {
        const int32_t t = pair_plain_step(lex, s);
        if (t == kMixed) {
            result = kMixed;
            break;
        }
        if (t != LexemeDfa::kDead) next.emplace_back(lex, t);  // still sorted: one pair per lexeme
    }
    if (result != kMixed) {
        if (next.empty()) {
            result = accepting(state) ? kMixed : kDead;  // a lexeme ends before a plain character
        } else {
            std::lock_guard lock(mu_);
            result = intern_locked(std::move(next));
        }
    }
    memo.store(result, std::memory_order_release);  // a race computes the same value twice
    return result;
}

// Follows the chain state -> plain_step -> ... until it dies, mixes, loops or reaches max_chars;
// each state on it gets (steps that follow it, capped at max_chars) or -1.
int LexerStates::plain_run(int32_t state, int max_chars) {
    const int r = plain_run_capped(state);
    if (r < 0) return -1;
    if (r >= kRunCap) return max_chars <= kRunCap ? max_chars : -1;
    return std::min(r, max_chars);
}

// plain_run with max_chars = kRunCap, memoised (independent of the vocabulary).
int LexerStates::plain_run_capped(int32_t state) {
    constexpr int max_chars = kRunCap;
    auto memo = [&](int32_t s) -> std::atomic<int32_t>& { return chunk(s).plain_run[slot(s)]; };
    std::vector<int32_t> chain;
    int tail = 0;  // the run of the state after chain.back()
    for (int32_t s = state;;) {
        if (const int known = memo(s).load(std::memory_order_acquire); known != kUnknown) {
            tail = known;
            break;
        }
        if (static_cast<int>(chain.size()) >= max_chars) {
            // Long enough for every plain token from `state`; the later states are not known yet.
            memo(state).store(max_chars, std::memory_order_release);
            return max_chars;
        }
        if (std::find(chain.begin(), chain.end(), s) != chain.end()) {
            tail = max_chars;  // a loop: plain characters go on for ever
            break;
        }
        chain.push_back(s);
        const int32_t t = plain_step(s);
        if (t == kMixed) {
            tail = -1;
            break;
        }
        if (t == kDead) {
            chain.pop_back();
            memo(s).store(0, std::memory_order_release);
            tail = 0;
            break;
        }
        s = t;
    }
    for (size_t i = chain.size(); i-- > 0;) {
        tail = tail < 0 ? -1 : std::min(max_chars, tail + 1);
        memo(chain[i]).store(tail, std::memory_order_release);
    }
    return memo(state).load(std::memory_order_acquire);
}

}  // namespace hichat::grammar
