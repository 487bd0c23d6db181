// RequestQueue: the only way into the engine from other threads. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/request.h"

namespace hichat::engine {

class RequestQueue {
public:
    explicit RequestQueue(size_t max_waiting) : max_waiting_(max_waiting) {}

    // False if the queue already holds max_waiting requests (the caller answers 429/503).
    bool push(Request request);
    // All of `requests` or none (false: the queue cannot take them all); drained together.
    bool push_all(std::vector<Request>& requests);
    // Asks the engine to drop a request, queued or running. Unknown ids are ignored.
    void cancel(RequestId id);
    // Engine thread: takes everything pushed or cancelled since the last call.
    void drain(std::vector<Request>& requests, std::vector<RequestId>& cancelled);
    // Engine thread: sleeps until something arrives, stop() is called, or the timeout passes.
    void wait(std::chrono::milliseconds timeout);
    void stop();
    size_t size() const;

private:
    size_t max_waiting_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Request> pending_;
    std::vector<RequestId> cancelled_;
    bool stopping_ = false;
};

}  // namespace hichat::engine
