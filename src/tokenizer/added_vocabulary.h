// Added tokens (special tokens such as "<|im_start|>" and non-special ones such as "<think>"):
// found in the raw input before normalization, longest match first, and never split by BPE.
// Immutable after construction; any thread may call split().
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_map.h"

namespace hichat::tokenizer {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool special = false;      // skipped by decode(skip_special_tokens); not matched without parse_special
    bool lstrip = false;       // swallows whitespace on its left
    bool rstrip = false;       // swallows whitespace on its right
    bool single_word = false;  // only matches when not inside a word
    bool normalized = false;   // matched on raw text here too (all tokenizers we load use false)
};

class AddedVocabulary {
public:
    AddedVocabulary() = default;
    explicit AddedVocabulary(std::vector<AddedToken> tokens);

    struct Section {
        std::string_view text;  // plain text to normalize and pre-tokenize, or the matched token text
        int32_t id;             // the added token's id, -1 for plain text
    };
    // Splits text into plain sections and added tokens. Special tokens are only recognised when
    // parse_special is true; non-special added tokens always are.
    void split(std::string_view text, bool parse_special, std::vector<Section>& sections) const;

    const std::vector<AddedToken>& tokens() const { return tokens_; }
    const AddedToken* find(std::string_view content) const;

private:
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index)
        int32_t token_index = -1;                           // token ending here, -1 if none
    };
    int32_t child(int32_t node, uint8_t byte) const;
    // Longest allowed token starting at pos; returns its index or -1 and sets end.
    int32_t match_at(std::string_view text, size_t pos, bool parse_special, size_t& end) const;

    std::vector<AddedToken> tokens_;
    StringMap<size_t> index_by_content_;
    std::vector<Node> trie_;             // [num_nodes], node 0 is the root
    std::array<bool, 256> first_bytes_{};  // [256] bytes that can start a token
};

}  // namespace hichat::tokenizer
