// Open-addressing hash table from a token-id pair to its BPE merge (rank and merged id).
// Immutable after construction; any thread may call find().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hichat::tokenizer {

struct Merge {
    int32_t rank = -1;     // position in the merges list: lower merges first
    int32_t merged_id = -1;
};

class PairRankTable {
public:
    explicit PairRankTable(size_t num_pairs_expected = 0);
    // Keeps the first insertion of a pair (the lowest rank when inserted in rank order).
    void insert(int32_t left_id, int32_t right_id, Merge merge);
    // Returns nullptr if the pair does not merge.
    const Merge* find(int32_t left_id, int32_t right_id) const {
        const uint64_t key = make_key(left_id, right_id);
        for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
            const Entry& e = entries_[slot];
            if (e.key == key) return &e.merge;
            if (e.key == kEmptyKey) return nullptr;
        }
    }
    size_t size() const { return num_entries_; }

private:
    static constexpr uint64_t kEmptyKey = ~uint64_t{0};
    struct Entry {
        uint64_t key = kEmptyKey;
        Merge merge;
    };
    static uint64_t make_key(int32_t left_id, int32_t right_id) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left_id)) << 32) | static_cast<uint32_t>(right_id);
    }
    static size_t hash(uint64_t key) {
        key ^= key >> 33;
        key *= 0xff51afd7ed558ccdULL;
        key ^= key >> 33;
        return static_cast<size_t>(key);
    }
    void grow();

    std::vector<Entry> entries_;  // [capacity], capacity a power of two, at most half full
    size_t mask_ = 0;
    size_t num_entries_ = 0;
};

}  // namespace hichat::tokenizer
