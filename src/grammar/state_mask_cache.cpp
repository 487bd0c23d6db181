#include "grammar/state_mask_cache.h"

#include <algorithm>

namespace hichat::grammar {

std::shared_ptr<const StateMask> StateMaskCache::get(std::string_view key, const std::function<StateMask()>& compute) {
    std::shared_ptr<Slot> slot;
    {
        std::shared_lock lock(mu_);
        auto it = slots_.find(std::string(key));
        if (it != slots_.end()) slot = it->second;
    }
    if (!slot) {
        std::unique_lock lock(mu_);
        auto it = slots_.find(std::string(key));
        if (it != slots_.end()) {
            slot = it->second;
        } else if (slots_.size() < kMaxEntries) {
            slot = std::make_shared<Slot>();
            slots_.emplace(std::string(key), slot);
        }
    }
    if (!slot) return std::make_shared<const StateMask>(compute());
    // Outside the map lock: other keys stay available while this one is computed.
    std::call_once(slot->once, [&] { slot->mask = std::make_shared<const StateMask>(compute()); });
    return slot->mask;
}

void StateMaskCache::note_recent(const std::string& family, const std::string& key,
                                 std::shared_ptr<const StateMask> mask) {
    std::lock_guard lock(recent_mu_);
    Recent& r = recent_[family];
    r.erase(std::remove_if(r.begin(), r.end(), [&](const auto& e) { return e.first == key; }), r.end());
    r.emplace(r.begin(), key, std::move(mask));
    if (r.size() > kRecentPerFamily) r.pop_back();
}

StateMaskCache::Recent StateMaskCache::recent(const std::string& family) const {
    std::lock_guard lock(recent_mu_);
    auto it = recent_.find(family);
    return it != recent_.end() ? it->second : Recent{};
}

size_t StateMaskCache::num_entries() const {
    std::shared_lock lock(mu_);
    return slots_.size();
}

std::shared_ptr<StateMaskCache> StateMaskCaches::for_tokenizer(const std::shared_ptr<const TokenizerInfo>& tokenizer) {
    std::lock_guard lock(mu_);
    caches_.erase(std::remove_if(caches_.begin(), caches_.end(), [](const auto& c) { return c.first.expired(); }),
                  caches_.end());
    for (const auto& [weak, cache] : caches_) {
        if (weak.lock() == tokenizer) return cache;
    }
    caches_.emplace_back(tokenizer, std::make_shared<StateMaskCache>());
    return caches_.back().second;
}

}  // namespace hichat::grammar
