#include "tokenizer/pair_rank_table.h"

#include "base/check.h"

namespace hichat::tokenizer {

PairRankTable::PairRankTable(size_t num_pairs_expected) {
    size_t capacity = 16;
    while (capacity < 2 * num_pairs_expected) capacity *= 2;
    entries_.resize(capacity);
    mask_ = capacity - 1;
}

void PairRankTable::insert(int32_t left_id, int32_t right_id, Merge merge) {
    CHECK_GE(left_id, 0);
    CHECK_GE(right_id, 0);
    if (2 * (num_entries_ + 1) > entries_.size()) grow();
    const uint64_t key = make_key(left_id, right_id);
    for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
        Entry& e = entries_[slot];
        if (e.key == key) return;
        if (e.key == kEmptyKey) {
            e.key = key;
            e.merge = merge;
            ++num_entries_;
            return;
        }
    }
}

void PairRankTable::grow() {
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(old.size() * 2, Entry{});
    mask_ = entries_.size() - 1;
    num_entries_ = 0;
    for (const Entry& e : old) {
        if (e.key != kEmptyKey) {
            insert(static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xffffffffu), e.merge);
        }
    }
}

}  // namespace hichat::tokenizer
