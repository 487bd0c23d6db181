// ConnectionRegistry: the server's list of open connections, for graceful shutdown.
// Internal to api/http. Thread-safe: connections add/remove themselves from I/O threads, the
// server drains / force-closes / waits from its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace hichat::api {

// What the server may ask of a connection. Both calls are thread-safe and return at once; the work
// happens on the connection's I/O strand.
class ConnectionControl {
public:
    virtual ~ConnectionControl() = default;
    // Server is shutting down: close if idle, else finish the current response and then close.
    virtual void drain() = 0;
    // Close now; a response in progress sees its client as gone.
    virtual void force_close() = 0;
};

class ConnectionRegistry {
public:
    // Returns the connection's id, or nullopt once drain_all() was called (the caller closes).
    std::optional<uint64_t> add(std::weak_ptr<ConnectionControl> connection);
    void remove(uint64_t id);

    void drain_all();        // also refuses later add()s
    void force_close_all();
    // True if the registry became empty by `deadline`.
    bool wait_empty_until(std::chrono::steady_clock::time_point deadline);
    size_t size() const;

private:
    // Live connections, copied out so that calls into them happen without mu_ held.
    std::unordered_map<uint64_t, std::weak_ptr<ConnectionControl>> snapshot() const;

    mutable std::mutex mu_;
    std::condition_variable empty_;
    std::unordered_map<uint64_t, std::weak_ptr<ConnectionControl>> connections_;
    uint64_t next_id_ = 1;
    bool draining_ = false;
};

}  // namespace hichat::api
