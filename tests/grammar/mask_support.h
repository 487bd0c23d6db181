// The reference mask: every token tried by accept_token (then rolled back).
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar_matcher.h"

namespace hichat::grammar::test {

inline std::vector<uint32_t> brute_force_mask(GrammarMatcher& m) {
    const TokenizerInfo& vocab = m.tokenizer();
    std::vector<uint32_t> bits(vocab.mask_words(), 0);
    for (int32_t id = 0; id < vocab.num_tokens(); ++id) {
        if (m.accept_token(id)) {
            bits[id >> 5] |= uint32_t{1} << (id & 31);
            m.rollback(1);
        }
    }
    return bits;
}

inline std::vector<int32_t> allowed_ids(const std::vector<uint32_t>& bits, int32_t num_tokens) {
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < num_tokens; ++id) {
        if ((bits[id >> 5] >> (id & 31)) & 1) ids.push_back(id);
    }
    return ids;
}

}  // namespace hichat::grammar::test
