// A fixed set of worker threads for data-parallel loops (CPU backend ops).
// Owned by whoever runs the forward pass; run() is called from one thread at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hichat {

class ThreadPool {
public:
    explicit ThreadPool(int num_threads);  // num_threads >= 1; the caller's thread is worker 0
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int num_threads() const { return num_threads_; }

    // Calls fn(thread_index) once on each of the num_threads() workers and waits for all.
    void run(const std::function<void(int thread_index)>& fn);

    // Splits [0, n) into contiguous ranges, one per worker: fn(begin, end).
    void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

private:
    void worker_loop(int thread_index);

    int num_threads_;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable wake_;
    const std::function<void(int)>* job_ = nullptr;
    uint64_t generation_ = 0;           // bumped per run(); workers wait for a new value
    std::atomic<int> num_pending_{0};   // workers still running the current job
    bool stopping_ = false;
};

}  // namespace hichat
