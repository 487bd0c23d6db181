#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::create(const BpeConfig& config, StringMap<int32_t> vocab,
                                                   const std::vector<std::pair<std::string, std::string>>& merges) {
    std::unique_ptr<BpeModel> model(new BpeModel(config));
    model->vocab_ = std::move(vocab);
    model->merges_ = PairRankTable(merges.size());
    std::string merged;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        merged.assign(left).append(right);
        auto l = model->vocab_.find(left);
        auto r = model->vocab_.find(right);
        auto m = model->vocab_.find(merged);
        if (l == model->vocab_.end() || r == model->vocab_.end() || m == model->vocab_.end()) {
            return invalid_argument("merge " + std::to_string(rank) + " ('" + left + "' + '" + right +
                                    "') uses or makes a token that is not in the vocab");
        }
        model->merges_.insert(l->second, r->second, Merge{static_cast<int32_t>(rank), m->second});
    }
    model->split_before_metaspace_ = !config.byte_level;
    for (const auto& [token, id] : model->vocab_) {
        for (size_t pos = token.find(kMetaspace, 1); pos != std::string::npos; pos = token.find(kMetaspace, pos + 1)) {
            if (pos < kMetaspace.size() || token.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0) {
                model->split_before_metaspace_ = false;
            }
        }
    }
    for (int byte = 0; byte < 256; ++byte) {
        auto it = model->vocab_.find(std::string(1, static_cast<char>(byte)));
        model->byte_ids_[byte] = it == model->vocab_.end() ? -1 : it->second;
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", byte);
        it = model->vocab_.find(std::string_view(name));
        model->byte_fallback_ids_[byte] = it == model->vocab_.end() ? -1 : it->second;
    }
    return model;
}

std::optional<int32_t> BpeModel::find(std::string_view token) const {
    auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
    if (word.empty()) return;
    if (config_.ignore_merges) {
        if (auto it = vocab_.find(word); it != vocab_.end()) {
            ids.push_back(it->second);
            return;
        }
    }
    if (!split_before_metaspace_) return encode_piece(word, ids);
    size_t begin = 0;
    for (size_t pos = word.find(kMetaspace, 1); pos != std::string_view::npos; pos = word.find(kMetaspace, pos + 1)) {
        if (pos >= kMetaspace.size() && word.compare(pos - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0) {
            continue;  // inside a run
        }
        encode_piece(word.substr(begin, pos - begin), ids);
        begin = pos;
    }
    encode_piece(word.substr(begin), ids);
}

void BpeModel::encode_piece(std::string_view word, std::vector<int32_t>& ids) const {
    if (lookup_cache(word, ids)) return;
    thread_local std::vector<Symbol> symbols;
    split_into_symbols(word, symbols);
    merge_symbols(symbols);
    const size_t num_ids_before = ids.size();
    emit_symbols(word, symbols, ids);
    store_cache(word, ids.data() + num_ids_before, ids.size() - num_ids_before);
}

void BpeModel::split_into_symbols(std::string_view word, std::vector<Symbol>& symbols) const {
    symbols.clear();
    size_t pos = 0;
    while (pos < word.size()) {
        const size_t begin = pos;
        int32_t id = -1;
        if (config_.byte_level) {
            id = byte_ids_[static_cast<uint8_t>(word[pos])];
            ++pos;
        } else {
            pos = std::min(word.size(), pos + utf8_sequence_length(static_cast<uint8_t>(word[pos])));
            if (auto it = vocab_.find(word.substr(begin, pos - begin)); it != vocab_.end()) id = it->second;
        }
        const auto index = static_cast<int32_t>(symbols.size());
        symbols.push_back(Symbol{id, index - 1, index + 1, static_cast<uint32_t>(begin), static_cast<uint32_t>(pos)});
    }
    if (!symbols.empty()) symbols.back().next = -1;
}

// Repeatedly applies the lowest-ranked merge among adjacent pairs, leftmost first on ties.
// A min-heap with lazy invalidation keeps this O(n log n), which matters for SentencePiece-style
// tokenizers whose whole input is one word.
void BpeModel::merge_symbols(std::vector<Symbol>& symbols) const {
    struct Candidate {
        int32_t rank;
        int32_t pos;
        int32_t left_id;
        int32_t right_id;
        int32_t merged_id;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    thread_local std::vector<Candidate> storage;
    storage.clear();
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap(std::greater<>{}, std::move(storage));
    auto push_pair = [&](int32_t pos) {
        if (pos < 0) return;
        const Symbol& left = symbols[pos];
        if (left.next < 0 || left.id < 0 || symbols[left.next].id < 0) return;
        if (const Merge* m = merges_.find(left.id, symbols[left.next].id)) {
            heap.push(Candidate{m->rank, pos, left.id, symbols[left.next].id, m->merged_id});
        }
    };
    for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        Symbol& left = symbols[c.pos];
        if (left.end == left.begin || left.id != c.left_id || left.next < 0) continue;
        Symbol& right = symbols[left.next];
        if (right.id != c.right_id) continue;
        left.id = c.merged_id;
        left.end = right.end;
        left.next = right.next;
        right.end = right.begin;  // marks the right symbol dead
        if (left.next >= 0) symbols[left.next].prev = c.pos;
        push_pair(left.prev);
        push_pair(c.pos);
    }
}

void BpeModel::emit_symbols(std::string_view word, const std::vector<Symbol>& symbols,
                            std::vector<int32_t>& ids) const {
    bool previous_was_unk = false;
    for (int32_t pos = symbols.empty() ? -1 : 0; pos >= 0; pos = symbols[pos].next) {
        const Symbol& s = symbols[pos];
        if (s.id >= 0) {
            ids.push_back(s.id);
            previous_was_unk = false;
            continue;
        }
        if (config_.byte_fallback) {
            const bool all_bytes_known = std::all_of(word.begin() + s.begin, word.begin() + s.end, [&](char c) {
                return byte_fallback_ids_[static_cast<uint8_t>(c)] >= 0;
            });
            if (all_bytes_known) {
                for (uint32_t i = s.begin; i < s.end; ++i) ids.push_back(byte_fallback_ids_[static_cast<uint8_t>(word[i])]);
                previous_was_unk = false;
                continue;
            }
        }
        if (config_.unk_id < 0) continue;
        if (!(config_.fuse_unk && previous_was_unk)) ids.push_back(config_.unk_id);
        previous_was_unk = true;
    }
}

bool BpeModel::lookup_cache(std::string_view word, std::vector<int32_t>& ids) const {
    if (word.size() > kMaxCachedWordBytes) return false;
    CacheShard& shard = cache_[StringHash{}(word) % kNumCacheShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.entries.find(word);
    if (it == shard.entries.end()) return false;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return true;
}

void BpeModel::store_cache(std::string_view word, const int32_t* word_ids, size_t num_ids) const {
    if (word.size() > kMaxCachedWordBytes) return;
    CacheShard& shard = cache_[StringHash{}(word) % kNumCacheShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    // A full shard starts over: cheaper than LRU bookkeeping, and hot words come back at once.
    if (shard.entries.size() >= kMaxCacheEntriesPerShard) shard.entries.clear();
    shard.entries.emplace(std::string(word), std::vector<int32_t>(word_ids, word_ids + num_ids));
}

}  // namespace hichat::tokenizer
