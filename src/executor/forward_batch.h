// ForwardBatch: the work of one forward pass, built by the caller (engine or CLI) for the runner.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hichat::executor {

struct ForwardSeq {
    std::span<const int32_t> block_table;  // [num_blocks] KV blocks of the sequence (kv::BlockTable),
                                           // enough for pos0 + tokens.size() positions
    int32_t pos0 = 0;                 // position of tokens[0]; KV of positions [0, pos0) is cached
    std::span<const int32_t> tokens;  // [num_tokens] new tokens, appended to the slot's KV
    bool all_logits = false;          // logits for every token (scoring) or only the last (generation)
};

struct ForwardBatch {
    std::vector<ForwardSeq> seqs;

    int64_t num_tokens() const {
        int64_t n = 0;
        for (const auto& s : seqs) n += static_cast<int64_t>(s.tokens.size());
        return n;
    }
    // Rows of the logits output: per sequence, all its tokens or just the last one.
    int64_t num_logit_rows() const {
        int64_t n = 0;
        for (const auto& s : seqs) n += s.all_logits ? static_cast<int64_t>(s.tokens.size()) : 1;
        return n;
    }
};

}  // namespace hichat::executor
