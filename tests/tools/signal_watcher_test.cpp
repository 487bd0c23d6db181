// SignalWatcher: a SIGTERM sent to the process reaches its callback; stop() ends the thread without
// calling it (the phantom "signal 15: draining" of a failed `hichat serve` start).
#include "signal_watcher.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>

namespace hichat::tools {
namespace {

// Each test leaves SIGTERM / SIGINT unblocked again in the test's thread.
class SignalWatcherTest : public ::testing::Test {
protected:
    void TearDown() override {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        sigaddset(&s, SIGINT);
        pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
    }
};

TEST_F(SignalWatcherTest, StopDoesNotCallTheCallback) {
    std::atomic<int> calls{0};
    SignalWatcher watcher;
    watcher.start([&](int) { ++calls; });
    watcher.stop();
    EXPECT_EQ(calls.load(), 0);
}

TEST_F(SignalWatcherTest, ProcessSignalReachesTheCallbackOnce) {
    std::atomic<int> calls{0}, last{0};
    SignalWatcher watcher;
    watcher.start([&](int sig) {
        ++calls;
        last = sig;
    });
    ASSERT_EQ(kill(getpid(), SIGINT), 0);  // blocked in this thread: only the watcher takes it
    watcher.wait();
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(last.load(), SIGINT);
    watcher.stop();  // after the signal: no effect, no second call
    EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace hichat::tools
