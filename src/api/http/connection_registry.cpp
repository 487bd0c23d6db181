#include "api/http/connection_registry.h"

#include <algorithm>
#include <utility>

namespace hichat::api {

std::optional<uint64_t> ConnectionRegistry::add(std::weak_ptr<ConnectionControl> connection) {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return std::nullopt;
    uint64_t id = next_id_++;
    connections_.emplace(id, std::move(connection));
    return id;
}

void ConnectionRegistry::remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(id);
    if (connections_.empty()) empty_.notify_all();
}

std::unordered_map<uint64_t, std::weak_ptr<ConnectionControl>> ConnectionRegistry::snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_;
}

void ConnectionRegistry::drain_all() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        draining_ = true;
    }
    for (auto& [id, weak] : snapshot()) {
        if (auto connection = weak.lock()) connection->drain();
    }
}

void ConnectionRegistry::force_close_all() {
    for (auto& [id, weak] : snapshot()) {
        if (auto connection = weak.lock()) connection->force_close();
    }
}

bool ConnectionRegistry::wait_empty_until(std::chrono::steady_clock::time_point deadline) {
    // Polls as well as waiting for remove(): a connection destroyed without remove() (it cannot
    // happen by design, but would otherwise hang shutdown until the deadline) is pruned here.
    constexpr auto kPollInterval = std::chrono::milliseconds(50);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        std::erase_if(connections_, [](const auto& entry) { return entry.second.expired(); });
        if (connections_.empty()) return true;
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline) return false;
        empty_.wait_until(lock, std::min(deadline, now + kPollInterval));
    }
}

size_t ConnectionRegistry::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_.size();
}

}  // namespace hichat::api
