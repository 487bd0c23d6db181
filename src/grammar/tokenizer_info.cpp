#include "grammar/tokenizer_info.h"

#include <algorithm>
#include <numeric>

namespace hichat::grammar {
namespace {

// Depth-first construction over `ids` sorted by bytes: `path` holds the node at each depth of the
// current prefix.
VocabTrie build_trie(const std::vector<std::string>& tb, std::vector<int32_t> ids) {
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return tb[a] < tb[b] || (tb[a] == tb[b] && a < b); });
    VocabTrie trie;
    auto& nodes = trie.nodes;
    nodes.push_back({0, 0, 0, 0});
    std::vector<uint32_t> path{0};
    std::string_view prev;
    for (int32_t id : ids) {
        std::string_view s = tb[id];
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
            node.tokens_begin = static_cast<uint32_t>(trie.tokens.size());
            path.push_back(static_cast<uint32_t>(nodes.size()));
            nodes.push_back(node);
        }
        trie.tokens.push_back(id);
        prev = s;
    }
    while (!path.empty()) {
        nodes[path.back()].subtree_end = static_cast<uint32_t>(nodes.size());
        path.pop_back();
    }
    TrieNode sentinel;
    sentinel.tokens_begin = static_cast<uint32_t>(trie.tokens.size());
    sentinel.subtree_end = static_cast<uint32_t>(nodes.size() + 1);
    nodes.push_back(sentinel);
    // Children come after their parent: from the back, a node's children are done before it.
    trie.max_depth.assign(nodes.size(), 0);
    for (size_t i = nodes.size() - 1; i-- > 0;) {
        uint16_t d = nodes[i].depth;
        for (uint32_t c = static_cast<uint32_t>(i) + 1; c < nodes[i].subtree_end; c = nodes[c].subtree_end) {
            d = std::max(d, trie.max_depth[c]);
        }
        trie.max_depth[i] = d;
    }
    return trie;
}

bool in(uint8_t b, uint8_t lo, uint8_t hi) { return b >= lo && b <= hi; }

}  // namespace

int TokenizerInfo::plain_chars(std::string_view bytes) {
    int chars = 0;
    for (size_t i = 0; i < bytes.size(); ++chars) {
        const auto b = static_cast<uint8_t>(bytes[i]);
        size_t len = 0;
        uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
        if (b >= 0x20 && b <= 0x7E) {
            if (b == '"' || b == '\\') return -1;
            ++i;
            continue;
        }
        if (in(b, 0xC2, 0xDF)) {
            len = 2;
        } else if (in(b, 0xE0, 0xEF)) {  // no overlong forms, no surrogates
            len = 3;
            lo = b == 0xE0 ? 0xA0 : 0x80;
            hi = b == 0xED ? 0x9F : 0xBF;
        } else if (in(b, 0xF0, 0xF4)) {  // no overlong forms, nothing above U+10FFFF
            len = 4;
            lo = b == 0xF0 ? 0x90 : 0x80;
            hi = b == 0xF4 ? 0x8F : 0xBF;
        } else {
            return -1;
        }
        if (i + len > bytes.size() || !in(static_cast<uint8_t>(bytes[i + 1]), lo, hi)) return -1;
        for (size_t k = 2; k < len; ++k) {
            if (!in(static_cast<uint8_t>(bytes[i + k]), 0x80, 0xBF)) return -1;
        }
        i += len;
    }
    return chars;
}

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
    const auto& tb = info->token_bytes_;

    std::vector<int32_t> text, non_plain;
    std::vector<int> chars(n, -1);
    int max_chars = 0;
    for (int32_t id = 0; id < n; ++id) {
        if (info->kind_[id] != kText || tb[id].empty()) continue;
        text.push_back(id);
        info->max_token_bytes_ = std::max<int>(info->max_token_bytes_, static_cast<int>(tb[id].size()));
        chars[id] = plain_chars(tb[id]);
        if (chars[id] < 0) non_plain.push_back(id);
        max_chars = std::max(max_chars, chars[id]);
    }
    info->plain_upto_.assign(max_chars + 1, std::vector<uint32_t>(info->mask_words(), 0));
    for (int32_t id : text) {
        if (chars[id] >= 0) info->plain_upto_[chars[id]][id >> 5] |= uint32_t{1} << (id & 31);
    }
    for (int k = 1; k <= max_chars; ++k) {
        for (size_t w = 0; w < info->mask_words(); ++w) info->plain_upto_[k][w] |= info->plain_upto_[k - 1][w];
    }
    info->trie_ = build_trie(tb, std::move(text));
    info->non_plain_trie_ = build_trie(tb, std::move(non_plain));
    return std::shared_ptr<const TokenizerInfo>(std::move(info));
}

}  // namespace hichat::grammar
