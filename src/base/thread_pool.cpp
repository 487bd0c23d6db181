#include "base/thread_pool.h"

#include <algorithm>

#include "base/check.h"

namespace hichat {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int thread_index) {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(int)>* job = nullptr;
        // Spin briefly before sleeping: forward passes issue many short jobs back to back, but a
        // long spin would take the core from the I/O threads between steps.
        for (int spin = 0; spin < 2000; ++spin) {
            if (__atomic_load_n(&generation_, __ATOMIC_ACQUIRE) != seen) break;
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
            job = job_;
        }
        (*job)(thread_index);
        num_pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::run(const std::function<void(int)>& fn) {
    if (num_threads_ == 1) {
        fn(0);
        return;
    }
    num_pending_.store(num_threads_ - 1, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(mu_);
        job_ = &fn;
        __atomic_store_n(&generation_, generation_ + 1, __ATOMIC_RELEASE);
    }
    wake_.notify_all();
    fn(0);
    while (num_pending_.load(std::memory_order_acquire) != 0) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    int parts = static_cast<int>(std::min<int64_t>(n, num_threads_));
    run([&](int t) {
        if (t >= parts) return;
        int64_t begin = n * t / parts, end = n * (t + 1) / parts;
        fn(begin, end);
    });
}

}  // namespace hichat
