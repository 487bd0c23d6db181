#include "api/preprocess_pool.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace hichat::api {

PreprocessPool::PreprocessPool(PreprocessPoolConfig config) : config_(config) {
    CHECK_GE(config_.num_workers, 1);
    CHECK_GE(config_.max_queued, 1);
    workers_.reserve(static_cast<size_t>(config_.num_workers));
    // Worker 0 keeps a lane for small tasks when there is another worker for large ones.
    for (int i = 0; i < config_.num_workers; ++i) {
        const bool small_only = i == 0 && config_.num_workers > 1;
        workers_.emplace_back([this, small_only] { worker_loop(small_only); });
    }
}

PreprocessPool::~PreprocessPool() { stop(); }

int PreprocessPool::default_num_workers(int num_cores, int num_io_threads, int num_compute_threads) {
    num_cores = std::max(num_cores, 1);
    const int compute = num_compute_threads > 0 ? num_compute_threads : num_cores;
    return std::clamp(num_cores - num_io_threads - compute, 2, 8);
}

PreprocessPool::Admission PreprocessPool::post(std::function<void()> task, size_t cost_bytes) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return Admission::kStopped;
        const bool empty = num_queued_locked() == 0;
        if (num_queued_locked() >= static_cast<size_t>(config_.max_queued)) return Admission::kQueueFull;
        if (!empty && queued_bytes_ + cost_bytes > config_.max_queued_bytes) return Admission::kQueueFull;
        (cost_bytes <= config_.small_task_bytes ? small_ : large_).push_back({std::move(task), cost_bytes});
        queued_bytes_ += cost_bytes;
    }
    wake_.notify_all();  // notify_one could wake only the small lane for a large task
    return Admission::kAccepted;
}

void PreprocessPool::worker_loop(bool small_only) {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || !small_.empty() || (!small_only && !large_.empty()); });
            if (stopping_) return;  // stop() destroys what is still queued
            std::deque<Task>& from = small_.empty() ? large_ : small_;
            task = std::move(from.front().run);
            queued_bytes_ -= from.front().cost_bytes;
            from.pop_front();
            ++num_running_;
        }
        task();
        task = nullptr;  // its captures (writer, lease, request) go before the task counts as done
        std::lock_guard<std::mutex> lock(mu_);
        --num_running_;
    }
}

void PreprocessPool::stop() {
    std::deque<Task> dropped_small, dropped_large;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        dropped_small.swap(small_);
        dropped_large.swap(large_);
        queued_bytes_ = 0;
    }
    wake_.notify_all();
    dropped_small.clear();  // outside the lock: a task's captures may take locks of their own
    dropped_large.clear();
    for (auto& t : workers_) {
        if (t.joinable()) t.join();
    }
}

PreprocessPoolStats PreprocessPool::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {.num_workers = config_.num_workers,
            .num_tasks_running = num_running_,
            .num_tasks_queued = static_cast<int>(num_queued_locked()),
            .num_bytes_queued = queued_bytes_};
}

}  // namespace hichat::api
