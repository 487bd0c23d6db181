// SerialWorker: one thread that runs posted tasks in order. For work that may wait on the disk (the
// session store's writes) and must not run on the engine thread, and must not be refused either:
// the queue is unbounded (each task is one finished turn, bounded by the requests in flight).
//
// Ownership: owned by `hichat serve`; what the tasks point to must outlive stop().
// Threads: post() from any thread; stop() and the destructor from one thread that is not the worker.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace hichat::api {

class SerialWorker {
public:
    SerialWorker();
    ~SerialWorker();  // stop()
    SerialWorker(const SerialWorker&) = delete;
    SerialWorker& operator=(const SerialWorker&) = delete;

    // Runs `task` after every task posted before it. After stop(), runs it on the caller's thread.
    void post(std::function<void()> task);
    // Runs what is queued, then joins the thread. Idempotent.
    void stop();

private:
    void loop();

    std::mutex mu_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;  // guarded by mu_
    bool stopping_ = false;                    // guarded by mu_
    std::thread thread_;
};

}  // namespace hichat::api
