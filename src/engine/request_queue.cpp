#include "engine/request_queue.h"

namespace hichat::engine {

const char* finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::kNone: return "null";
        case FinishReason::kStop: return "stop";
        case FinishReason::kLength: return "length";
        case FinishReason::kContentFilter: return "content_filter";
        case FinishReason::kCancelled: return "cancelled";
        case FinishReason::kDeadline: return "deadline";
    }
    return "unknown";
}

bool RequestQueue::push(Request request) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (pending_.size() >= max_waiting_) return false;
        pending_.push_back(std::move(request));
    }
    cv_.notify_one();
    return true;
}

bool RequestQueue::push_all(std::vector<Request>& requests) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (pending_.size() + requests.size() > max_waiting_) return false;
        for (Request& r : requests) pending_.push_back(std::move(r));
    }
    cv_.notify_one();
    return true;
}

void RequestQueue::cancel(RequestId id) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        cancelled_.push_back(id);
    }
    cv_.notify_one();
}

void RequestQueue::drain(std::vector<Request>& requests, std::vector<RequestId>& cancelled) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& r : pending_) requests.push_back(std::move(r));
    pending_.clear();
    cancelled.insert(cancelled.end(), cancelled_.begin(), cancelled_.end());
    cancelled_.clear();
}

void RequestQueue::wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return stopping_ || !pending_.empty() || !cancelled_.empty(); });
}

void RequestQueue::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
}

size_t RequestQueue::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size();
}

}  // namespace hichat::engine
