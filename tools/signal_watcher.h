// SignalWatcher: the one thread of `hichat serve` that takes SIGTERM / SIGINT (sigwait) and starts the
// graceful shutdown. Construct it before any other thread: the constructor blocks both signals in the
// calling thread, and threads started later inherit that mask, so only the watcher receives them.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>

namespace hichat::tools {

class SignalWatcher {
public:
    SignalWatcher();
    ~SignalWatcher();  // stop()
    SignalWatcher(const SignalWatcher&) = delete;
    SignalWatcher& operator=(const SignalWatcher&) = delete;

    // Starts the thread; on the first SIGTERM or SIGINT it calls on_signal(signal number) once.
    void start(std::function<void(int)> on_signal);
    // Blocks until a signal came and on_signal returned.
    void wait();
    // Ends the thread without calling on_signal (a start-up that failed). No effect after a signal.
    void stop();

private:
    sigset_t signals_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace hichat::tools
