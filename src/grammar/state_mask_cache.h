// StateMaskCache: the per-lexer-state token masks of one (CompiledGrammar, TokenizerInfo) pair,
// shared by every matcher of that pair so that a request with a schema seen before starts warm.
// A lexer state is keyed by its content (the sorted (lexeme, automaton state) pairs), which is the
// same in every matcher. Each entry is computed once: a second thread asking for an entry being
// computed waits for it. Owned by the CompiledGrammar (through StateMaskCaches); any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/tokenizer_info.h"

namespace hichat::grammar {

// The tokens that stay inside the lexeme from one lexer state, and the trie nodes where the lexeme
// ends (the node's byte cannot extend it and the state before is complete). Immutable once built.
struct StateMask {
    std::vector<uint32_t> bits;                            // [mask words]
    const VocabTrie* trie = nullptr;                       // the trie `boundaries` index (full or non-plain)
    std::vector<std::pair<uint32_t, int32_t>> boundaries;  // (trie node, index into accepted_sets)
    std::vector<std::vector<int32_t>> accepted_sets;       // sorted lexeme ids complete before a boundary
};

class StateMaskCache {
public:
    static constexpr size_t kMaxEntries = 2048;  // 16 KB each with a 128k vocabulary: at most 32 MB

    // The mask for `key`, built by `compute` on the first call. Past kMaxEntries, computed and not kept.
    std::shared_ptr<const StateMask> get(std::string_view key, const std::function<StateMask()>& compute);
    size_t num_entries() const;

    // The masks noted lately for lexer states of one family (LexerStates::family), newest first,
    // with their keys: a new state's mask can start from a look-alike's (two positions of one
    // bounded string share all tokens shorter than the distance to the bound).
    static constexpr size_t kRecentPerFamily = 4;
    using Recent = std::vector<std::pair<std::string, std::shared_ptr<const StateMask>>>;
    void note_recent(const std::string& family, const std::string& key, std::shared_ptr<const StateMask> mask);
    Recent recent(const std::string& family) const;

private:
    struct Slot {
        std::once_flag once;
        std::shared_ptr<const StateMask> mask;
    };
    mutable std::shared_mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<Slot>> slots_;
    mutable std::mutex recent_mu_;
    std::unordered_map<std::string, Recent> recent_;  // by family
};

// The StateMaskCache of each vocabulary a grammar has been used with. Thread-safe.
class StateMaskCaches {
public:
    std::shared_ptr<StateMaskCache> for_tokenizer(const std::shared_ptr<const TokenizerInfo>& tokenizer);

private:
    std::mutex mu_;
    std::vector<std::pair<std::weak_ptr<const TokenizerInfo>, std::shared_ptr<StateMaskCache>>> caches_;
};

}  // namespace hichat::grammar
