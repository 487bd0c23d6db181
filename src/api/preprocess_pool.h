// PreprocessPool: worker threads that take the CPU-heavy part of a request off the I/O threads
// (JSON parsing, the input deny-list, the chat template, tokenizing, length checks, Engine::submit),
// so that an I/O thread never waits for a large prompt. Two bounded FIFOs: small tasks (a request body
// of at most `small_task_bytes`) go before large ones, and with two or more workers one worker takes
// only small tasks, so a small request never waits behind large prompts, however many are queued.
// A full queue is refused at once (the caller answers 429), never waited for.
//
// Ownership: owned by `hichat serve`; whatever the tasks point to must outlive stop().
// Threads: post() and stats() from any thread; stop() and the destructor from one non-worker thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hichat::api {

struct PreprocessPoolConfig {
    int num_workers = 2;   // >= 1
    int max_queued = 1024;  // tasks waiting for a worker beyond this are refused; >= 1
    // The costs (request bodies) waiting at once: a burst of many small requests queues, a flood of
    // large ones is refused before it holds that much memory. A task is always accepted into an
    // empty queue.
    size_t max_queued_bytes = size_t{256} << 20;
    size_t small_task_bytes = 64 << 10;  // a task of at most this cost is small
};

// One consistent snapshot (taken under the pool's lock), for /metrics.
struct PreprocessPoolStats {
    int num_workers = 0;
    int num_tasks_running = 0;  // on a worker now
    int num_tasks_queued = 0;   // waiting for a worker
    size_t num_bytes_queued = 0;  // their costs
};

class PreprocessPool {
public:
    explicit PreprocessPool(PreprocessPoolConfig config);  // starts the workers
    ~PreprocessPool();                                     // stop()
    PreprocessPool(const PreprocessPool&) = delete;
    PreprocessPool& operator=(const PreprocessPool&) = delete;

    // Workers for a machine of `num_cores` where the HTTP server runs `num_io_threads` and the CPU
    // backend `num_compute_threads` (0: all cores): the cores they leave, at least 2 (so that one
    // large prompt never holds up every other request) and at most 8.
    static int default_num_workers(int num_cores, int num_io_threads, int num_compute_threads);

    enum class Admission { kAccepted, kQueueFull, kStopped };
    // Queues `task` for a worker; `cost_bytes` (the request body's size) makes it small or large.
    // The task must not throw. When it is not accepted, `task` is destroyed before post() returns,
    // on the caller's thread.
    Admission post(std::function<void()> task, size_t cost_bytes);

    // Takes no more tasks, destroys the queued ones without running them (on the calling thread),
    // waits for the running ones to return and joins the workers. Idempotent.
    void stop();

    PreprocessPoolStats stats() const;

private:
    void worker_loop(bool small_only);
    struct Task {
        std::function<void()> run;
        size_t cost_bytes = 0;
    };
    size_t num_queued_locked() const { return small_.size() + large_.size(); }  // requires mu_

    const PreprocessPoolConfig config_;
    mutable std::mutex mu_;
    std::condition_variable wake_;
    std::deque<Task> small_;  // guarded by mu_
    std::deque<Task> large_;  // guarded by mu_
    size_t queued_bytes_ = 0;  // guarded by mu_
    int num_running_ = 0;                      // guarded by mu_
    bool stopping_ = false;                    // guarded by mu_
    std::vector<std::thread> workers_;
};

}  // namespace hichat::api
