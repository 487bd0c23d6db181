#include "api/preprocess_pool.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace hichat::api {

PreprocessPool::PreprocessPool(PreprocessPoolConfig config) : config_(config) {
    CHECK_GE(config_.num_workers, 1);
    CHECK_GE(config_.max_queued, 1);
    workers_.reserve(static_cast<size_t>(config_.num_workers));
    for (int i = 0; i < config_.num_workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

PreprocessPool::~PreprocessPool() { stop(); }

int PreprocessPool::default_num_workers(int num_cores, int num_io_threads, int num_compute_threads) {
    num_cores = std::max(num_cores, 1);
    const int compute = num_compute_threads > 0 ? num_compute_threads : num_cores;
    return std::clamp(num_cores - num_io_threads - compute, 2, 8);
}

PreprocessPool::Admission PreprocessPool::post(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return Admission::kStopped;
        if (queue_.size() >= static_cast<size_t>(config_.max_queued)) return Admission::kQueueFull;
        queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return Admission::kAccepted;
}

void PreprocessPool::worker_loop() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_) return;  // stop() destroys what is still queued
            task = std::move(queue_.front());
            queue_.pop_front();
            ++num_running_;
        }
        task();
        task = nullptr;  // its captures (writer, lease, request) go before the task counts as done
        std::lock_guard<std::mutex> lock(mu_);
        --num_running_;
    }
}

void PreprocessPool::stop() {
    std::deque<std::function<void()>> dropped;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        dropped.swap(queue_);
    }
    wake_.notify_all();
    dropped.clear();  // outside the lock: a task's captures may take locks of their own
    for (auto& t : workers_) {
        if (t.joinable()) t.join();
    }
}

PreprocessPoolStats PreprocessPool::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {.num_workers = config_.num_workers,
            .num_tasks_running = num_running_,
            .num_tasks_queued = static_cast<int>(queue_.size())};
}

}  // namespace hichat::api
