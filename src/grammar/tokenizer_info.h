// TokenizerInfo: what the grammar matcher needs to know about a vocabulary, built once per model:
// each token's bytes, the ids that never stand for text (special tokens, EOS), and a byte trie over
// the text tokens in depth-first order (a node's subtree is the index range [node + 1, subtree_end)).
// For the slicer (llguidance's idea): the "plain" tokens, whose bytes are all plain JSON-string
// characters (ASCII 0x20-0x7E but '"' and '\\', or whole valid UTF-8 sequences of 2-4 bytes), as
// bitsets by number of characters, and a second trie of the other tokens.
// Immutable after create(); shared by all matchers of the model; any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::grammar {

struct TrieNode {
    uint8_t byte = 0;           // the byte on the edge from the parent (root: unused)
    uint16_t depth = 0;         // bytes from the root (root 0)
    uint32_t subtree_end = 0;   // one past the last node of this node's subtree
    uint32_t tokens_begin = 0;  // tokens ending here: token_ids[tokens_begin, next node's tokens_begin)
};

// A byte trie over some of the text tokens, in depth-first order.
struct VocabTrie {
    std::vector<TrieNode> nodes;  // [0] root, last: sentinel
    std::vector<int32_t> tokens;  // token ids by node: nodes[i].tokens_begin .. nodes[i + 1].tokens_begin
    std::vector<uint16_t> max_depth;  // by node: the depth of the deepest node of its subtree
};

class TokenizerInfo {
public:
    // token_bytes[id]: the raw bytes token id stands for (Tokenizer::token_bytes). eos_ids: the ids
    // that end a sequence (allowed exactly in accepting states). special_ids: other ids that never
    // match text. Empty byte strings never match either. vocab_size: the mask width in tokens (the
    // model's logits width, >= token_bytes.size()); 0 means token_bytes.size().
    // Errors (kInvalidArgument): an id out of range, vocab_size too small.
    static Result<std::shared_ptr<const TokenizerInfo>> create(std::vector<std::string> token_bytes,
                                                               std::vector<int32_t> eos_ids,
                                                               std::vector<int32_t> special_ids = {},
                                                               int32_t vocab_size = 0);

    int32_t vocab_size() const { return vocab_size_; }                     // bits in a mask
    size_t mask_words() const { return (static_cast<size_t>(vocab_size_) + 31) / 32; }  // uint32 words
    int32_t num_tokens() const { return static_cast<int32_t>(token_bytes_.size()); }
    std::string_view token_bytes(int32_t id) const { return token_bytes_[id]; }
    const std::vector<int32_t>& eos_ids() const { return eos_ids_; }
    bool is_eos(int32_t id) const { return id >= 0 && id < num_tokens() && kind_[id] == kEos; }
    bool is_text(int32_t id) const { return id >= 0 && id < num_tokens() && kind_[id] == kText; }
    int max_token_bytes() const { return max_token_bytes_; }

    const VocabTrie& trie() const { return trie_; }              // all text tokens
    const VocabTrie& non_plain_trie() const { return non_plain_trie_; }  // text tokens that are not plain
    // The most characters in a plain token (0: none).
    int max_plain_chars() const { return static_cast<int>(plain_upto_.size()) - 1; }
    // [mask words]: plain tokens of at most num_chars characters (capped at max_plain_chars()).
    const std::vector<uint32_t>& plain_tokens_upto(int num_chars) const {
        return plain_upto_[std::min(num_chars, max_plain_chars())];
    }
    // Characters in `bytes` if it is plain text, else -1.
    static int plain_chars(std::string_view bytes);

private:
    enum Kind : uint8_t { kText, kEos, kSpecial };

    std::vector<std::string> token_bytes_;
    std::vector<uint8_t> kind_;
    std::vector<int32_t> eos_ids_;
    VocabTrie trie_;
    VocabTrie non_plain_trie_;
    std::vector<std::vector<uint32_t>> plain_upto_;  // [max plain chars + 1][mask words]
    int32_t vocab_size_ = 0;
    int max_token_bytes_ = 0;
};

}  // namespace hichat::grammar
