#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace hichat {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
    for (int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        for (int64_t n : {0, 1, 5, 1000}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            for (int rep = 0; rep < 50; ++rep) {
                pool.parallel_for(n, [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
                });
            }
            for (auto& h : hits) ASSERT_EQ(h.load(), 50);
        }
    }
}

TEST(ThreadPool, RunGivesEachWorkerItsIndex) {
    ThreadPool pool(4);
    std::vector<std::atomic<int>> seen(4);
    pool.run([&](int t) { seen[static_cast<size_t>(t)]++; });
    for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

}  // namespace
}  // namespace hichat
