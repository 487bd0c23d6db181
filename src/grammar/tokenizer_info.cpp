#include "grammar/tokenizer_info.h"

#include <algorithm>
#include <numeric>

namespace hichat::grammar {

Result<std::shared_ptr<const TokenizerInfo>> TokenizerInfo::create(std::vector<std::string> token_bytes,
                                                                   std::vector<int32_t> eos_ids,
                                                                   std::vector<int32_t> special_ids,
                                                                   int32_t vocab_size) {
    auto info = std::make_shared<TokenizerInfo>();
    const auto n = static_cast<int32_t>(token_bytes.size());
    if (vocab_size == 0) vocab_size = n;
    if (vocab_size < n) {
        return invalid_argument("TokenizerInfo: vocab_size " + std::to_string(vocab_size) + " is below the " +
                                std::to_string(n) + " tokens");
    }
    info->vocab_size_ = vocab_size;
    info->kind_.assign(n, kText);
    for (int32_t id : special_ids) {
        if (id < 0 || id >= n) return invalid_argument("TokenizerInfo: special id " + std::to_string(id) + " out of range");
        info->kind_[id] = kSpecial;
    }
    for (int32_t id : eos_ids) {
        if (id < 0 || id >= n) return invalid_argument("TokenizerInfo: eos id " + std::to_string(id) + " out of range");
        info->kind_[id] = kEos;
    }
    std::sort(eos_ids.begin(), eos_ids.end());
    eos_ids.erase(std::unique(eos_ids.begin(), eos_ids.end()), eos_ids.end());
    info->eos_ids_ = std::move(eos_ids);
    info->token_bytes_ = std::move(token_bytes);

    std::vector<int32_t> order;
    for (int32_t id = 0; id < n; ++id) {
        if (info->kind_[id] == kText && !info->token_bytes_[id].empty()) order.push_back(id);
    }
    const auto& tb = info->token_bytes_;
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tb[a] < tb[b] || (tb[a] == tb[b] && a < b); });

    // Depth-first construction: `path` holds the node index at each depth of the current prefix.
    auto& nodes = info->trie_;
    nodes.push_back({0, 0, 0, 0});
    std::vector<uint32_t> path{0};
    std::string_view prev;
    for (int32_t id : order) {
        std::string_view s = tb[id];
        info->max_token_bytes_ = std::max<int>(info->max_token_bytes_, static_cast<int>(s.size()));
        size_t common = 0;
        while (common < s.size() && common < prev.size() && common + 1 < path.size() && s[common] == prev[common]) ++common;
        while (path.size() > common + 1) {
            nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
            path.pop_back();
        }
        for (size_t k = common; k < s.size(); ++k) {
            TrieNode node;
            node.byte = static_cast<uint8_t>(s[k]);
            node.depth = static_cast<uint16_t>(k + 1);
            node.tokens_begin = static_cast<uint32_t>(info->trie_tokens_.size());
            path.push_back(static_cast<uint32_t>(nodes.size()));
            nodes.push_back(node);
        }
        info->trie_tokens_.push_back(id);
        prev = s;
    }
    while (!path.empty()) {
        nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
        path.pop_back();
    }
    TrieNode sentinel;
    sentinel.tokens_begin = static_cast<uint32_t>(info->trie_tokens_.size());
    sentinel.subtree_end = static_cast<uint32_t>(nodes.size() + 1);
    nodes.push_back(sentinel);
    return std::shared_ptr<const TokenizerInfo>(std::move(info));
}

}  // namespace hichat::grammar
