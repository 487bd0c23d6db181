// TokenizerInfo: what the grammar matcher needs to know about a vocabulary, built once per model:
// each token's bytes, the ids that never stand for text (special tokens, EOS), and a byte trie over
// the text tokens in depth-first order (a node's subtree is the index range [node + 1, subtree_end)).
// Immutable after create(); shared by all matchers of the model; any thread.
#pragma once

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

    const std::vector<TrieNode>& trie() const { return trie_; }  // [0] root, last: sentinel
    const std::vector<int32_t>& trie_tokens() const { return trie_tokens_; }

private:
    enum Kind : uint8_t { kText, kEos, kSpecial };

    std::vector<std::string> token_bytes_;
    std::vector<uint8_t> kind_;
    std::vector<int32_t> eos_ids_;
    std::vector<TrieNode> trie_;
    std::vector<int32_t> trie_tokens_;
    int32_t vocab_size_ = 0;
    int max_token_bytes_ = 0;
};

}  // namespace hichat::grammar
