#include "api/serial_worker.h"

#include <utility>

namespace hichat::api {

SerialWorker::SerialWorker() : thread_([this] { loop(); }) {}

SerialWorker::~SerialWorker() { stop(); }

void SerialWorker::post(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (!stopping_) {
            tasks_.push_back(std::move(task));
            wake_.notify_one();
            return;
        }
    }
    task();
}

void SerialWorker::loop() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
            if (tasks_.empty()) return;  // stopping, nothing left
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();
    }
}

void SerialWorker::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

}  // namespace hichat::api
