// Byte-pair encoding of one pre-token ("word") into ids: the model step of tokenizer.json's "BPE".
// Immutable after create() except for the word cache, which is sharded and locked, so encode_word()
// may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/pair_rank_table.h"
#include "tokenizer/string_map.h"

namespace hichat::tokenizer {

struct BpeConfig {
    bool byte_level = false;     // symbols are raw bytes (GPT-2 style); else UTF-8 characters
    bool byte_fallback = false;  // unknown characters become <0xXX> tokens (SentencePiece style)
    bool ignore_merges = false;  // a word found whole in the vocab is one token (Llama-3)
    bool fuse_unk = false;       // consecutive unknown symbols become one unk token
    int32_t unk_id = -1;         // -1: unknown symbols are dropped
};

class BpeModel {
public:
    // vocab keys and merges are raw token bytes (byte-level text already mapped back to bytes).
    // Errors: kInvalidArgument naming the first merge whose parts or result are not in the vocab.
    static Result<std::unique_ptr<BpeModel>> create(const BpeConfig& config, StringMap<int32_t> vocab,
                                                    const std::vector<std::pair<std::string, std::string>>& merges);

    // Appends the ids of word (raw bytes; UTF-8 when not byte-level) to ids.
    void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

    std::optional<int32_t> find(std::string_view token) const;
    size_t num_merges() const { return merges_.size(); }

private:
    struct Symbol {
        int32_t id;      // -1: not in the vocab
        int32_t prev;    // index of the previous live symbol, -1 at the start
        int32_t next;    // index of the next live symbol, -1 at the end
        uint32_t begin;  // byte range in the word
        uint32_t end;
    };

    explicit BpeModel(const BpeConfig& config) : config_(config) {}
    void split_into_symbols(std::string_view word, std::vector<Symbol>& symbols) const;
    void merge_symbols(std::vector<Symbol>& symbols) const;
    void emit_symbols(std::string_view word, const std::vector<Symbol>& symbols, std::vector<int32_t>& ids) const;
    void encode_piece(std::string_view word, std::vector<int32_t>& ids) const;
    bool lookup_cache(std::string_view word, std::vector<int32_t>& ids) const;
    void store_cache(std::string_view word, const int32_t* ids, size_t num_ids) const;

    BpeConfig config_;
    StringMap<int32_t> vocab_;
    PairRankTable merges_;
    std::array<int32_t, 256> byte_ids_;           // [256] id of each single byte, -1 if absent
    std::array<int32_t, 256> byte_fallback_ids_;  // [256] id of "<0xXX>", -1 if absent
    // No vocab token has "▁" right after another character, so no merge crosses the start of a
    // "▁" run and a word may be cut there (SentencePiece-style words are whole sections).
    bool split_before_metaspace_ = false;

    static constexpr size_t kNumCacheShards = 16;
    static constexpr size_t kMaxCachedWordBytes = 64;
    static constexpr size_t kMaxCacheEntriesPerShard = 8192;
    struct CacheShard {
        std::mutex mutex;
        StringMap<std::vector<int32_t>> entries;
    };
    mutable std::array<CacheShard, kNumCacheShards> cache_;
};

}  // namespace hichat::tokenizer
