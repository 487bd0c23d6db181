// GrammarMatcher: the per-sequence state of one constrained generation: which bytes have been
// accepted so far, whether the text may end here, and which tokens may come next (a bitmask).
// It keeps the parser (Earley rows over lexemes) apart from the lexer (a lazy DFA over bytes), and
// caches per lexer state the tokens that stay inside the current lexeme (in a StateMaskCache shared
// by all matchers of the same grammar and vocabulary), so that most masks are a copy plus a short
// walk of the trie below the points where a lexeme ends.
// Owned by one sequence; one thread at a time (different matchers may run on different threads;
// they share the grammar's LexerStates and StateMaskCache, both thread-safe).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/earley_parser.h"
#include "grammar/lexer_states.h"
#include "grammar/state_mask_cache.h"
#include "grammar/tokenizer_info.h"

namespace hichat::grammar {

struct MatcherOptions {
    int max_rollback_tokens = 16;  // accepted tokens that rollback() can undo (older ones are final)
};

class GrammarMatcher {
public:
    GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenizerInfo> tokenizer,
                   MatcherOptions options = {});

    // Accepts token id if the grammar allows it here; false (state unchanged) otherwise. An EOS id
    // is allowed exactly when is_accepting(), and ends the sequence (is_terminated()).
    bool accept_token(int32_t id);
    // Accepts text that did not come from one token (e.g. a forced prefix); one rollback step.
    bool accept_bytes(std::string_view bytes);
    // bits[i / 32] bit (i % 32) = token i may come next; bits.size() >= tokenizer->mask_words().
    // EOS ids are set iff is_accepting(); special ids never. After termination, all zero.
    void fill_next_token_bitmask(std::span<uint32_t> bits);
    // The text so far is a complete match: end-of-sequence is allowed here.
    bool is_accepting();
    // EOS was accepted, or the text is complete and no byte can follow.
    bool is_terminated();
    // Undoes the last num_tokens accept_token / accept_bytes calls; false (unchanged) if more than
    // num_rollback_available().
    bool rollback(int num_tokens);
    int num_rollback_available() const { return static_cast<int>(history_.size()); }
    void reset();

    const CompiledGrammar& grammar() const { return *grammar_; }
    const TokenizerInfo& tokenizer() const { return *tokenizer_; }

private:
    struct Checkpoint {
        size_t num_rows;
        int32_t lexer;
        bool in_lexeme;
        bool terminated;
    };
    // A shared StateMask, with its accepted sets as this matcher's accepted ids.
    struct LocalMask {
        std::shared_ptr<const StateMask> mask;
        std::vector<int32_t> accepted_ids;  // [mask->accepted_sets.size()]
    };

    Checkpoint checkpoint() const { return {store_.rows.size(), lexer_, in_lexeme_, terminated_}; }
    void restore(const Checkpoint& c);
    void push_history(const Checkpoint& c);
    bool advance(uint8_t byte);
    int32_t lexer_start_of(int32_t row);
    int32_t current_state();
    const LocalMask& state_mask(int32_t state);
    StateMask compute_state_mask(int32_t state);
    // Of the masks noted lately for the state's family (unsliced), the one whose state behaves like
    // `state` for the most bytes, and how many (0: none).
    std::pair<std::shared_ptr<const StateMask>, int> look_alike(int32_t state);
    void walk_past_depth(int32_t state, int depth, uint32_t* bits, std::vector<std::pair<uint32_t, int32_t>>* record);
    int32_t scan_temp(int32_t row, int32_t accepted_id, const std::vector<int32_t>& accepted);
    void walk(const VocabTrie& trie, uint32_t begin, uint32_t end, int base_depth, int32_t parent_state, int32_t row,
              uint32_t* bits, std::vector<std::pair<uint32_t, int32_t>>* record, size_t frames_begin = 0);
    void drop_temp_rows();

    std::shared_ptr<const CompiledGrammar> grammar_;
    std::shared_ptr<const TokenizerInfo> tokenizer_;
    MatcherOptions options_;
    EarleyParser parser_;
    LexerStates& lexer_states_;  // the grammar's, shared with its other matchers
    RowStore store_;
    int32_t lexer_ = LexerStates::kDead;  // current lexer state
    bool in_lexeme_ = false;              // bytes of the current lexeme have been read
    bool terminated_ = false;
    std::deque<Checkpoint> history_;
    std::shared_ptr<StateMaskCache> shared_masks_;     // of (grammar_, tokenizer_), shared by matchers
    std::vector<LocalMask> masks_;                     // by lexer state; mask null until first use
    std::unordered_map<uint64_t, int32_t> scan_memo_;  // (row, accepted set) -> temp row, one fill
    // walk's lexer state at each depth, with its transitions; a nested walk uses the frames after
    // its caller's (no allocation per walk: a fill may walk hundreds of subtrees).
    struct WalkFrame {
        int32_t state;
        LexerStates::Row row;
    };
    std::vector<WalkFrame> walk_frames_;
    // Below this a look-alike's mask leaves most of the trie to walk again: walk it all.
    static constexpr int kMinAgreeingDepth = 8;
};

}  // namespace hichat::grammar
