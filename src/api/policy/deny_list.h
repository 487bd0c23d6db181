// DenyList: words and phrases a request may not contain. Loaded once at start-up from a file (one
// phrase per line, '#' comments, blank lines skipped); read-only afterwards, so any thread may call find().
// Matching is ASCII case-insensitive on bytes (other bytes match exactly) through an Aho-Corasick
// automaton, so the cost is one table step per text byte whatever the number of phrases.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::api {

class DenyList {
public:
    DenyList() { build(); }

    // Errors: kNotFound / kInvalidArgument naming the path (and line).
    static Result<DenyList> load(const std::string& path);
    // Phrases are used as given; empty ones are skipped.
    static DenyList from_phrases(std::vector<std::string> phrases);

    // The phrase of the match that ends first in `text` (ties: the phrase listed first), as written in
    // the file; nullopt when none occurs.
    std::optional<std::string> find(std::string_view text) const;

    // All phrases, file order, as written (for the engine's output filter).
    const std::vector<std::string>& phrases() const { return phrases_; }
    bool empty() const { return phrases_.empty(); }

private:
    static constexpr int32_t kNoPhrase = -1;

    void build();
    void build_alphabet();
    void build_trie();
    void build_links();

    std::vector<std::string> phrases_;        // [num_phrases] as written
    std::array<uint8_t, 256> byte_class_{};   // byte -> alphabet class; 0: a byte in no phrase
    int num_classes_ = 1;
    std::vector<int32_t> next_;               // [num_nodes * num_classes_] DFA transitions, node 0 = root
    std::vector<int32_t> best_phrase_;        // [num_nodes] lowest phrase index ending here, or kNoPhrase
};

}  // namespace hichat::api
