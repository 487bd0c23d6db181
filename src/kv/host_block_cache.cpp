#include "kv/host_block_cache.h"

#include "base/check.h"

namespace hichat::kv {

HostBlockCache::HostBlockCache(int num_slots) : slots_(static_cast<size_t>(num_slots)) {
    CHECK_GE(num_slots, 0);
    for (int32_t s = 0; s < num_slots; ++s) push_back(s);
}

int32_t HostBlockCache::find(const BlockHash& key) const {
    auto it = by_key_.find(key);
    return it == by_key_.end() ? kNone : it->second;
}

void HostBlockCache::touch(int32_t slot) {
    unlink(slot);
    push_back(slot);
}

int32_t HostBlockCache::insert(const BlockHash& key) {
    CHECK(by_key_.find(key) == by_key_.end()) << "key already in the host tier";
    int32_t s = head_;  // empty slots sit at the head; pinned ones were touched, so they sit at the tail
    while (s != kNone && slots_[static_cast<size_t>(s)].pinned) s = slots_[static_cast<size_t>(s)].next;
    if (s == kNone) return kNone;
    Slot& slot = slots_[static_cast<size_t>(s)];
    if (slot.keyed) {
        by_key_.erase(slot.key);
        ++num_dropped_;
    }
    slot.keyed = true;
    slot.key = key;
    by_key_.emplace(key, s);
    touch(s);
    return s;
}

void HostBlockCache::pin(int32_t slot) {
    Slot& s = slots_[static_cast<size_t>(slot)];
    if (s.pinned) return;
    s.pinned = true;
    pinned_.push_back(slot);
}

void HostBlockCache::unpin_all() {
    for (int32_t s : pinned_) slots_[static_cast<size_t>(s)].pinned = false;
    pinned_.clear();
}

void HostBlockCache::check_invariants() const {
    int listed = 0, keyed = 0;
    for (int32_t s = head_, prev = kNone; s != kNone; prev = s, s = slots_[static_cast<size_t>(s)].next) {
        const Slot& slot = slots_[static_cast<size_t>(s)];
        CHECK_EQ(slot.prev, prev) << "host slot " << s << ": broken LRU link";
        CHECK_LE(++listed, num_slots()) << "the host LRU list has a cycle";
        if (!slot.keyed) continue;
        ++keyed;
        auto it = by_key_.find(slot.key);
        CHECK(it != by_key_.end() && it->second == s) << "host slot " << s << ": key not mapped";
    }
    CHECK_EQ(listed, num_slots()) << "a host slot is missing from the LRU list";
    CHECK_EQ(keyed, num_used()) << "a host key maps to no keyed slot";
}

void HostBlockCache::unlink(int32_t s) {
    Slot& slot = slots_[static_cast<size_t>(s)];
    if (slot.prev != kNone) slots_[static_cast<size_t>(slot.prev)].next = slot.next;
    else head_ = slot.next;
    if (slot.next != kNone) slots_[static_cast<size_t>(slot.next)].prev = slot.prev;
    else tail_ = slot.prev;
    slot.prev = slot.next = kNone;
}

void HostBlockCache::push_back(int32_t s) {
    Slot& slot = slots_[static_cast<size_t>(s)];
    slot.next = kNone;
    slot.prev = tail_;
    if (tail_ != kNone) slots_[static_cast<size_t>(tail_)].next = s;
    tail_ = s;
    if (head_ == kNone) head_ = s;
}

}  // namespace hichat::kv
