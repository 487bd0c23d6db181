#include "signal_watcher.h"

#include <pthread.h>

namespace hichat::tools {

SignalWatcher::SignalWatcher() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

SignalWatcher::~SignalWatcher() { stop(); }

void SignalWatcher::start(std::function<void(int)> on_signal) {
    thread_ = std::thread([this, on_signal = std::move(on_signal)] {
        int sig = 0;
        sigwait(&signals_, &sig);
        // stop() wakes the thread with a SIGTERM of its own, which is not a request to shut down.
        if (!stopping_.load()) on_signal(sig);
    });
}

void SignalWatcher::wait() {
    if (thread_.joinable()) thread_.join();
}

void SignalWatcher::stop() {
    if (!thread_.joinable()) return;
    stopping_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);
    thread_.join();
}

}  // namespace hichat::tools
