// PreprocessPool: bounded FIFO, refusals, stop() drops what is queued and waits for what runs.
// Workers are held by the tests' own tasks (a latch each test opens), never by sleeping.
#include "api/preprocess_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace hichat::api {
namespace {

// A task that reports when it started and returns once the gate opens.
struct Gate {
    std::promise<void> open;
    std::shared_future<void> opened = open.get_future().share();
};

std::function<void()> held_task(const Gate& gate, std::promise<void>& started) {
    return [opened = gate.opened, &started] {
        started.set_value();
        opened.wait();
    };
}

constexpr size_t kSmall = 100;        // bytes: under small_task_bytes
constexpr size_t kLarge = 4u << 20;   // bytes: over it

TEST(PreprocessPool, DefaultWorkersAreTheCoresLeftInTwoToEight) {
    EXPECT_EQ(PreprocessPool::default_num_workers(2, 1, 1), 2);  // none left: the floor
    EXPECT_EQ(PreprocessPool::default_num_workers(16, 2, 14), 2);
    EXPECT_EQ(PreprocessPool::default_num_workers(16, 2, 4), 8);  // 10 left: the cap
    EXPECT_EQ(PreprocessPool::default_num_workers(16, 2, 9), 5);
    EXPECT_EQ(PreprocessPool::default_num_workers(16, 2, 0), 2);  // 0 compute threads: all cores
    EXPECT_EQ(PreprocessPool::default_num_workers(0, 1, 1), 2);   // unknown core count
}

TEST(PreprocessPool, RunsEveryTaskAndCountsThem) {
    PreprocessPool pool({.num_workers = 3, .max_queued = 100});
    std::atomic<int> num_done{0};
    std::vector<std::promise<void>> done(50);
    std::vector<std::future<void>> finished;
    for (auto& d : done) finished.push_back(d.get_future());
    for (auto& d : done) {
        auto task = [&num_done, &d] {
            num_done.fetch_add(1);
            d.set_value();
        };
        ASSERT_EQ(pool.post(task, kSmall), PreprocessPool::Admission::kAccepted);
    }
    for (auto& f : finished) f.wait();
    EXPECT_EQ(num_done.load(), 50);
    pool.stop();
    EXPECT_EQ(pool.stats().num_workers, 3);
}

TEST(PreprocessPool, FullQueueIsRefusedAtOnceAndTheRefusedTaskIsDestroyed) {
    PreprocessPool pool({.num_workers = 1, .max_queued = 2});
    Gate gate;
    std::promise<void> started;
    std::future<void> has_started = started.get_future();
    ASSERT_EQ(pool.post(held_task(gate, started), kSmall), PreprocessPool::Admission::kAccepted);
    has_started.wait();  // the only worker is held
    EXPECT_EQ(pool.post([] {}, kSmall), PreprocessPool::Admission::kAccepted);
    EXPECT_EQ(pool.post([] {}, kSmall), PreprocessPool::Admission::kAccepted);
    auto token = std::make_shared<int>(0);
    EXPECT_EQ(pool.post([token] {}, kSmall), PreprocessPool::Admission::kQueueFull);
    EXPECT_EQ(token.use_count(), 1) << "a refused task must not be kept";
    PreprocessPoolStats s = pool.stats();
    EXPECT_EQ(s.num_tasks_running, 1);
    EXPECT_EQ(s.num_tasks_queued, 2);
    gate.open.set_value();
}

TEST(PreprocessPool, QueuedBytesAreBoundedButAnEmptyQueueTakesAnyTask) {
    PreprocessPool pool({.num_workers = 1, .max_queued = 100, .max_queued_bytes = 1000});
    Gate gate;
    std::promise<void> started;
    std::future<void> has_started = started.get_future();
    ASSERT_EQ(pool.post(held_task(gate, started), kSmall), PreprocessPool::Admission::kAccepted);
    has_started.wait();  // the only worker is held
    EXPECT_EQ(pool.post([] {}, 5000), PreprocessPool::Admission::kAccepted) << "an empty queue takes any task";
    EXPECT_EQ(pool.post([] {}, 1), PreprocessPool::Admission::kQueueFull) << "5000 bytes already wait";
    EXPECT_EQ(pool.stats().num_bytes_queued, 5000u);
    gate.open.set_value();
    pool.stop();
}

TEST(PreprocessPool, ManySmallTasksQueueWithinTheByteBound) {
    PreprocessPool pool({.num_workers = 1, .max_queued = 100, .max_queued_bytes = 1000});
    Gate gate;
    std::promise<void> started;
    std::future<void> has_started = started.get_future();
    ASSERT_EQ(pool.post(held_task(gate, started), kSmall), PreprocessPool::Admission::kAccepted);
    has_started.wait();
    for (int i = 0; i < 10; ++i) EXPECT_EQ(pool.post([] {}, 100), PreprocessPool::Admission::kAccepted) << i;
    EXPECT_EQ(pool.post([] {}, 100), PreprocessPool::Admission::kQueueFull) << "1000 bytes wait";
    gate.open.set_value();
    pool.stop();
}

TEST(PreprocessPool, StopDropsQueuedTasksAndWaitsForRunningOnes) {
    PreprocessPool pool({.num_workers = 1, .max_queued = 8});
    Gate gate;
    std::promise<void> started;
    std::atomic<bool> running_returned{false};
    std::future<void> has_started = started.get_future();
    auto held = [opened = gate.opened, &started, &running_returned] {
        started.set_value();
        opened.wait();
        running_returned = true;
    };
    ASSERT_EQ(pool.post(held, kSmall), PreprocessPool::Admission::kAccepted);
    has_started.wait();
    std::atomic<int> num_queued_ran{0};
    auto token = std::make_shared<int>(0);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(pool.post([&num_queued_ran, token] { num_queued_ran.fetch_add(1); }, kSmall),
                  PreprocessPool::Admission::kAccepted);
    }
    auto stopped = std::async(std::launch::async, [&pool] { pool.stop(); });
    // stop() destroys the queued tasks first (the token's count drops), then waits for the held one.
    while (token.use_count() > 1) std::this_thread::yield();
    EXPECT_EQ(stopped.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
    gate.open.set_value();
    stopped.get();
    EXPECT_TRUE(running_returned.load());
    EXPECT_EQ(num_queued_ran.load(), 0);
    EXPECT_EQ(pool.post([] {}, kSmall), PreprocessPool::Admission::kStopped);
    pool.stop();  // idempotent
}

// The small lane: with every worker but the first held by large tasks and more large ones queued, a
// small task still runs at once; the queued large ones wait for a general worker.
TEST(PreprocessPool, SmallTaskRunsWhileLargeOnesHoldTheOtherWorkersAndQueue) {
    PreprocessPool pool({.num_workers = 2, .max_queued = 8});
    Gate gate;
    std::promise<void> started;
    std::future<void> has_started = started.get_future();
    ASSERT_EQ(pool.post(held_task(gate, started), kLarge), PreprocessPool::Admission::kAccepted);
    has_started.wait();  // the general worker is held
    std::atomic<int> num_large_ran{0};
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(pool.post([&num_large_ran] { num_large_ran.fetch_add(1); }, kLarge), PreprocessPool::Admission::kAccepted);
    }
    std::promise<void> small_done;
    std::future<void> small_finished = small_done.get_future();
    ASSERT_EQ(pool.post([&small_done] { small_done.set_value(); }, kSmall), PreprocessPool::Admission::kAccepted);
    small_finished.wait();  // never returns if small tasks queue behind large ones
    EXPECT_EQ(num_large_ran.load(), 0) << "the small lane must not take large tasks";
    EXPECT_EQ(pool.stats().num_tasks_queued, 3);
    gate.open.set_value();
    pool.stop();
}

}  // namespace
}  // namespace hichat::api
