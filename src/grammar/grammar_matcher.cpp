#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "base/check.h"

namespace hichat::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::shared_ptr<const TokenizerInfo> tokenizer, MatcherOptions options)
    : grammar_(std::move(grammar)),
      tokenizer_(std::move(tokenizer)),
      options_(options),
      parser_(*grammar_),
      lexer_states_(grammar_->lexer_states()),
      shared_masks_(grammar_->mask_cache(tokenizer_)) {
    reset();
}

void GrammarMatcher::reset() {
    store_.rows.clear();
    store_.rows.push_back(parser_.initial_row());
    store_.num_committed = 1;
    lexer_ = lexer_start_of(0);
    in_lexeme_ = false;
    terminated_ = false;
    history_.clear();
}

int32_t GrammarMatcher::lexer_start_of(int32_t row) {
    EarleyRow& r = store_.rows[row];
    if (r.lexer_start == -2) r.lexer_start = lexer_states_.start_state(r.allowed_lexemes);
    return r.lexer_start;
}

int32_t GrammarMatcher::current_state() { return in_lexeme_ ? lexer_ : lexer_start_of(store_.num_committed - 1); }

void GrammarMatcher::restore(const Checkpoint& c) {
    store_.rows.resize(c.num_rows);
    store_.num_committed = c.num_rows;
    lexer_ = c.lexer;
    in_lexeme_ = c.in_lexeme;
    terminated_ = c.terminated;
}

void GrammarMatcher::push_history(const Checkpoint& c) {
    history_.push_back(c);
    while (static_cast<int>(history_.size()) > options_.max_rollback_tokens) history_.pop_front();
}

// One byte on the committed state. On false the state is partly changed: callers restore.
bool GrammarMatcher::advance(uint8_t byte) {
    const int32_t s = current_state();
    if (s == LexerStates::kDead) return false;
    const int32_t t = lexer_states_.next(s, byte);
    if (t != LexerStates::kDead) {
        lexer_ = t;
        in_lexeme_ = true;
        return true;
    }
    if (!in_lexeme_ || !lexer_states_.accepting(s)) return false;
    EarleyRow row;
    const auto top = static_cast<int32_t>(store_.num_committed - 1);
    if (!parser_.scan(store_, top, lexer_states_.accepted(s), row)) return false;
    store_.rows.push_back(std::move(row));
    store_.num_committed = store_.rows.size();
    const int32_t s0 = lexer_start_of(static_cast<int32_t>(store_.num_committed - 1));
    if (s0 == LexerStates::kDead) return false;
    const int32_t t0 = lexer_states_.next(s0, byte);
    if (t0 == LexerStates::kDead) return false;
    lexer_ = t0;
    in_lexeme_ = true;
    return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
    if (terminated_) return false;
    const Checkpoint before = checkpoint();
    for (char c : bytes) {
        if (!advance(static_cast<uint8_t>(c))) {
            restore(before);
            return false;
        }
    }
    push_history(before);
    return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
    if (terminated_) return false;
    if (tokenizer_->is_eos(id)) {
        if (!is_accepting()) return false;
        push_history(checkpoint());
        terminated_ = true;
        return true;
    }
    if (!tokenizer_->is_text(id) || tokenizer_->token_bytes(id).empty()) return false;
    return accept_bytes(tokenizer_->token_bytes(id));
}

bool GrammarMatcher::is_accepting() {
    if (terminated_) return true;
    const auto top = static_cast<int32_t>(store_.num_committed - 1);
    if (!in_lexeme_) return store_.rows[top].accepting;
    if (!lexer_states_.accepting(lexer_)) return false;
    EarleyRow row;
    return parser_.scan(store_, top, lexer_states_.accepted(lexer_), row) && row.accepting;
}

bool GrammarMatcher::is_terminated() {
    if (terminated_) return true;
    if (!is_accepting()) return false;
    const auto top = static_cast<int32_t>(store_.num_committed - 1);
    if (!in_lexeme_) return store_.rows[top].allowed_lexemes.empty();
    if (lexer_states_.has_next(lexer_)) return false;
    EarleyRow row;
    return parser_.scan(store_, top, lexer_states_.accepted(lexer_), row) && row.allowed_lexemes.empty();
}

bool GrammarMatcher::rollback(int num_tokens) {
    if (num_tokens < 0 || num_tokens > static_cast<int>(history_.size())) return false;
    if (num_tokens == 0) return true;
    const Checkpoint c = history_[history_.size() - num_tokens];
    history_.resize(history_.size() - num_tokens);
    restore(c);
    return true;
}

const GrammarMatcher::LocalMask& GrammarMatcher::state_mask(int32_t state) {
    if (static_cast<size_t>(state) >= masks_.size()) masks_.resize(state + 1);
    LocalMask& local = masks_[state];
    if (!local.mask) {
        const std::string key = lexer_states_.key(state);
        local.mask = shared_masks_->get(key, [&] { return compute_state_mask(state); });
        for (const auto& set : local.mask->accepted_sets) local.accepted_ids.push_back(lexer_states_.accepted_id_of(set));
        if (local.mask->trie == &tokenizer_->trie()) shared_masks_->note_recent(lexer_states_.family(state), key, local.mask);
    }
    return local;
}

std::pair<std::shared_ptr<const StateMask>, int> GrammarMatcher::look_alike(int32_t state) {
    std::pair<std::shared_ptr<const StateMask>, int> best{nullptr, 0};
    for (auto& [key, mask] : shared_masks_->recent(lexer_states_.family(state))) {
        const int depth = lexer_states_.agreeing_depth(state, key, tokenizer_->max_token_bytes());
        if (depth > best.second) best = {std::move(mask), depth};
    }
    return best;
}

// One walk of the trie from `state` without the parser. With the slicer (plain_run >= 0), the plain
// tokens short enough come from TokenizerInfo's bitsets and only the non-plain trie is walked.
// Else, when a look-alike state's mask is known (say the previous position of a bounded string),
// its tokens and lexeme ends up to the depth where the two states part are taken as they are and
// only the deeper part of the trie is walked.
StateMask GrammarMatcher::compute_state_mask(int32_t state) {
    StateMask m;
    std::vector<std::pair<uint32_t, std::vector<int32_t>>> ends;  // (node, lexemes complete before it)
    std::vector<std::pair<uint32_t, int32_t>> found;               // (node, lexer state before it)
    const int run = lexer_states_.plain_run(state, tokenizer_->max_plain_chars());
    if (run >= 0) {
        m.bits = tokenizer_->plain_tokens_upto(run);
        m.trie = &tokenizer_->non_plain_trie();
        walk(*m.trie, 1, static_cast<uint32_t>(m.trie->nodes.size() - 1), 0, state, -1, m.bits.data(), &found);
    } else if (auto [like, depth] = look_alike(state); depth >= kMinAgreeingDepth) {
        m.trie = &tokenizer_->trie();
        m.bits = like->bits;
        for (auto [node, set] : like->boundaries) {
            if (m.trie->nodes[node].depth <= depth) ends.emplace_back(node, like->accepted_sets[set]);
        }
        walk_past_depth(state, depth, m.bits.data(), &found);
    } else {
        m.bits.assign(tokenizer_->mask_words(), 0);
        m.trie = &tokenizer_->trie();
        walk(*m.trie, 1, static_cast<uint32_t>(m.trie->nodes.size() - 1), 0, state, -1, m.bits.data(), &found);
    }
    for (auto [node, before] : found) ends.emplace_back(node, lexer_states_.accepted(before));
    std::map<std::vector<int32_t>, int32_t> set_of;  // lexemes -> index into m.accepted_sets (a few)
    for (auto& [node, set] : ends) {
        auto [it, fresh] = set_of.emplace(set, static_cast<int32_t>(m.accepted_sets.size()));
        if (fresh) m.accepted_sets.push_back(std::move(set));
        m.boundaries.emplace_back(node, it->second);
    }
    return m;
}

// The look-alike's bits and lexeme ends are right for every node of depth <= `depth`. Walks from
// `state` only the nodes that lead deeper, and each subtree that starts below `depth` anew (its
// tokens cleared first: they are the look-alike's).
void GrammarMatcher::walk_past_depth(int32_t state, int depth, uint32_t* bits,
                                     std::vector<std::pair<uint32_t, int32_t>>* record) {
    const VocabTrie& trie = tokenizer_->trie();
    const auto& nodes = trie.nodes;
    const size_t num_frames = static_cast<size_t>(tokenizer_->max_token_bytes()) + 2;
    if (walk_frames_.size() < num_frames) walk_frames_.resize(num_frames);
    WalkFrame* stack = walk_frames_.data();
    stack[0] = {state, lexer_states_.row(state)};
    for (uint32_t i = 1; i + 1 < nodes.size();) {
        const TrieNode& node = nodes[i];
        if (trie.max_depth[i] <= depth) {
            i = node.subtree_end;
            continue;
        }
        const WalkFrame parent = stack[node.depth - 1];
        if (node.depth > depth) {
            for (uint32_t j = node.tokens_begin; j < nodes[node.subtree_end].tokens_begin; ++j) {
                const int32_t id = trie.tokens[j];
                bits[id >> 5] &= ~(uint32_t{1} << (id & 31));
            }
            walk(trie, i, node.subtree_end, node.depth - 1, parent.state, -1, bits, record, num_frames);
            stack = walk_frames_.data();  // the walk may have grown the frames
            i = node.subtree_end;
            continue;
        }
        const int32_t t = lexer_states_.next_in(parent.row, parent.state, node.byte);
        if (t == LexerStates::kDead) {  // dead for the look-alike too, and its lexeme end is kept
            i = node.subtree_end;
            continue;
        }
        stack[node.depth] = {t, lexer_states_.row(t)};
        ++i;
    }
}

// The temporary row after a lexeme that completes the lexemes `accepted` (this matcher's id
// accepted_id), following `row`; -1 if the parser does not allow it. Memoised for one fill.
int32_t GrammarMatcher::scan_temp(int32_t row, int32_t accepted_id, const std::vector<int32_t>& accepted) {
    const uint64_t key = (static_cast<uint64_t>(row) << 32) | static_cast<uint32_t>(accepted_id);
    auto it = scan_memo_.find(key);
    if (it != scan_memo_.end()) return it->second;
    EarleyRow out;
    int32_t id = -1;
    if (parser_.scan(store_, row, accepted, out)) {
        store_.rows.push_back(std::move(out));
        id = static_cast<int32_t>(store_.rows.size() - 1);
    }
    scan_memo_.emplace(key, id);
    return id;
}

// Walks nodes [begin, end) of `trie`, whose top nodes sit at depth base_depth + 1 below a parent in
// lexer state parent_state. Tokens reached are set in bits. Where a lexeme ends: with `record`,
// the node is recorded (no parser); else the parser scans it after `row` and the walk goes on.
void GrammarMatcher::walk(const VocabTrie& trie, uint32_t begin, uint32_t end, int base_depth, int32_t parent_state,
                          int32_t row, uint32_t* bits, std::vector<std::pair<uint32_t, int32_t>>* record,
                          size_t frames_begin) {
    const auto& nodes = trie.nodes;
    const auto& tokens = trie.tokens;
    const size_t num_frames = static_cast<size_t>(tokenizer_->max_token_bytes()) + 2;
    if (walk_frames_.size() < frames_begin + num_frames) walk_frames_.resize(frames_begin + num_frames);
    WalkFrame* stack = walk_frames_.data() + frames_begin;
    stack[0] = {parent_state, lexer_states_.row(parent_state)};
    for (uint32_t i = begin; i < end;) {
        const TrieNode& node = nodes[i];
        const int k = node.depth - base_depth;
        const WalkFrame parent = stack[k - 1];
        const int32_t t = lexer_states_.next_in(parent.row, parent.state, node.byte);
        if (t != LexerStates::kDead) {
            for (uint32_t j = node.tokens_begin; j < nodes[i + 1].tokens_begin; ++j) {
                const int32_t id = tokens[j];
                bits[id >> 5] |= uint32_t{1} << (id & 31);
            }
            ++i;
            // Only a node with children is ever a parent.
            if (i < node.subtree_end) stack[k] = {t, lexer_states_.row(t)};
            continue;
        }
        // A start state is never complete (lexemes are not empty), so a complete ps has read bytes.
        const int32_t ps = parent.state;
        if (lexer_states_.accepting(ps)) {
            if (record != nullptr) {
                record->emplace_back(i, ps);
            } else {
                const int32_t next_row = scan_temp(row, lexer_states_.accepted_id(ps), lexer_states_.accepted(ps));
                if (next_row >= 0) {
                    const int32_t s0 = lexer_start_of(next_row);
                    if (s0 != LexerStates::kDead) {
                        walk(trie, i, node.subtree_end, node.depth - 1, s0, next_row, bits, nullptr,
                             frames_begin + num_frames);
                        stack = walk_frames_.data() + frames_begin;  // the nested walk may have grown the frames
                    }
                }
            }
        }
        i = node.subtree_end;
    }
}

void GrammarMatcher::drop_temp_rows() {
    store_.rows.resize(store_.num_committed);
    scan_memo_.clear();
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> bits) {
    CHECK(bits.size() >= tokenizer_->mask_words()) << bits.size() << " words for " << tokenizer_->vocab_size();
    std::fill(bits.begin(), bits.end(), 0u);
    if (terminated_) return;
    const int32_t s = current_state();
    if (s != LexerStates::kDead) {
        const LocalMask& local = state_mask(s);
        const StateMask& m = *local.mask;
        std::memcpy(bits.data(), m.bits.data(), m.bits.size() * sizeof(uint32_t));
        const auto top = static_cast<int32_t>(store_.num_committed - 1);
        const auto& nodes = m.trie->nodes;
        for (auto [node, set] : m.boundaries) {
            const int32_t next_row = scan_temp(top, local.accepted_ids[set], m.accepted_sets[set]);
            if (next_row < 0) continue;
            const int32_t s0 = lexer_start_of(next_row);
            if (s0 == LexerStates::kDead) continue;
            walk(*m.trie, node, nodes[node].subtree_end, nodes[node].depth - 1, s0, next_row, bits.data(), nullptr);
        }
        drop_temp_rows();
    }
    if (is_accepting()) {
        for (int32_t id : tokenizer_->eos_ids()) bits[id >> 5] |= uint32_t{1} << (id & 31);
    }
}

}  // namespace hichat::grammar
