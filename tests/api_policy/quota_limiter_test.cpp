#include "api/policy/quota_lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace hichat::api {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const KeyId kAlice{"key-aaaaaaaa"};
const KeyId kBob{"key-bbbbbbbb"};
const SteadyTime kT0 = SteadyTime{} + std::chrono::hours(1);

SteadyTime at(double s) { return kT0 + std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(s)); }

// Admits and immediately releases, so only the per-minute windows matter.
Admission admit_once(QuotaLimiter& q, const KeyId& key, SteadyTime now) {
    Admission a = q.admit(key, now);
    if (a.ok) q.release(key);
    return a;
}

TEST(QuotaConfigTest, ValidateNamesNegativeField) {
    EXPECT_TRUE(QuotaConfig{}.validate().ok());
    EXPECT_TRUE(QuotaConfig{}.unlimited());
    Status s = QuotaConfig{.requests_per_minute = -1}.validate();
    EXPECT_NE(s.message().find("requests_per_minute"), std::string::npos);
    s = QuotaConfig{.tokens_per_minute = -5}.validate();
    EXPECT_NE(s.message().find("tokens_per_minute"), std::string::npos);
    s = QuotaConfig{.max_concurrent = -2}.validate();
    EXPECT_NE(s.message().find("max_concurrent"), std::string::npos);
}

TEST(QuotaLimiterTest, UnlimitedAdmitsEverything) {
    QuotaLimiter q(QuotaConfig{});
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(q.admit(kAlice, at(0)).ok);
    q.record_tokens(kAlice, 1'000'000, at(0));
    EXPECT_TRUE(q.admit(kAlice, at(0)).ok);
    EXPECT_EQ(q.num_in_flight(kAlice), 1001);
}

TEST(QuotaLimiterTest, RequestsPerMinuteSlidingWindow) {
    QuotaLimiter q(QuotaConfig{.requests_per_minute = 3});
    EXPECT_TRUE(admit_once(q, kAlice, at(0)).ok);
    EXPECT_TRUE(admit_once(q, kAlice, at(10)).ok);
    EXPECT_TRUE(admit_once(q, kAlice, at(20)).ok);

    Admission a = admit_once(q, kAlice, at(30));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.limit, QuotaLimit::kRequestsPerMinute);
    EXPECT_EQ(a.retry_after_s, 30);  // the t=0 admission leaves the window at t=60
    EXPECT_FALSE(a.reason.empty());

    a = admit_once(q, kAlice, at(59.5));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.retry_after_s, 1);  // 0.5 s rounds up

    EXPECT_TRUE(admit_once(q, kAlice, at(60)).ok);  // t=0 has left; window now {10, 20, 60}
    a = admit_once(q, kAlice, at(61));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.retry_after_s, 9);  // t=10 leaves at 70

    EXPECT_TRUE(admit_once(q, kBob, at(61)).ok);  // keys are independent
}

TEST(QuotaLimiterTest, RefusedRequestsDoNotCountTowardTheWindow) {
    QuotaLimiter q(QuotaConfig{.requests_per_minute = 1});
    EXPECT_TRUE(admit_once(q, kAlice, at(0)).ok);
    for (int i = 1; i < 60; ++i) EXPECT_FALSE(admit_once(q, kAlice, at(i)).ok);
    EXPECT_TRUE(admit_once(q, kAlice, at(60)).ok);
}

// Reference: the literal definition, "fewer than N admissions in (now - 60 s, now]", over every admission.
TEST(QuotaLimiterTest, RequestsMatchBruteForceReferenceOnRandomTimes) {
    std::mt19937 rng(7);
    for (int limit : {1, 2, 5, 17}) {
        QuotaLimiter q(QuotaConfig{.requests_per_minute = limit});
        std::vector<SteadyTime> admitted;
        SteadyTime now = kT0;
        for (int step = 0; step < 2000; ++step) {
            now += milliseconds(std::uniform_int_distribution<int>(0, 9000)(rng));
            int in_window = 0;
            for (SteadyTime t : admitted) in_window += (now - t < seconds(60)) ? 1 : 0;
            bool expected_ok = in_window < limit;
            Admission a = admit_once(q, kAlice, now);
            ASSERT_EQ(a.ok, expected_ok) << "limit " << limit << " step " << step;
            if (a.ok) {
                admitted.push_back(now);
            } else {
                // Retry-After is the first whole second at which the reference would admit.
                std::vector<SteadyTime> inside;
                for (SteadyTime t : admitted) {
                    if (now - t < seconds(60)) inside.push_back(t);
                }
                SteadyTime frees_at = inside[inside.size() - limit] + seconds(60);
                auto wait = std::chrono::ceil<seconds>(frees_at - now).count();
                ASSERT_EQ(a.retry_after_s, std::max<int64_t>(wait, 1));
            }
        }
    }
}

TEST(QuotaLimiterTest, TokensPerMinuteWindowAndRetryAfter) {
    QuotaLimiter q(QuotaConfig{.tokens_per_minute = 100});
    q.record_tokens(kAlice, 60, at(0));
    EXPECT_TRUE(admit_once(q, kAlice, at(1)).ok);  // 60 < 100
    q.record_tokens(kAlice, 50, at(5));             // 110 >= 100
    Admission a = admit_once(q, kAlice, at(10));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.limit, QuotaLimit::kTokensPerMinute);
    EXPECT_EQ(a.retry_after_s, 50);  // the 60 tokens of t=0 leave at t=60, leaving 50 < 100
    EXPECT_FALSE(admit_once(q, kAlice, at(59.9)).ok);
    EXPECT_TRUE(admit_once(q, kAlice, at(60)).ok);
    EXPECT_TRUE(admit_once(q, kBob, at(10)).ok);
}

TEST(QuotaLimiterTest, TokensRetryAfterSkipsBinsUntilBelowLimit) {
    QuotaLimiter q(QuotaConfig{.tokens_per_minute = 50});
    q.record_tokens(kAlice, 40, at(0));
    q.record_tokens(kAlice, 40, at(10));
    q.record_tokens(kAlice, 40, at(20));  // 120 in the window
    Admission a = admit_once(q, kAlice, at(30));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.retry_after_s, 40);  // at t=60 still 80 >= 50; at t=70 40 < 50
    EXPECT_FALSE(admit_once(q, kAlice, at(65)).ok);
    EXPECT_TRUE(admit_once(q, kAlice, at(70)).ok);
}

TEST(QuotaLimiterTest, TokensWithinOneSecondShareABinThatExpiresAfterItsLastToken) {
    QuotaLimiter q(QuotaConfig{.tokens_per_minute = 20});
    q.record_tokens(kAlice, 10, at(0));
    q.record_tokens(kAlice, 10, at(0.5));  // same bin; leaves the window at 60.5
    Admission a = admit_once(q, kAlice, at(60.2));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.retry_after_s, 1);
    EXPECT_TRUE(admit_once(q, kAlice, at(60.5)).ok);
}

TEST(QuotaLimiterTest, ConcurrencyLimitAndRelease) {
    QuotaLimiter q(QuotaConfig{.max_concurrent = 2});
    EXPECT_TRUE(q.admit(kAlice, at(0)).ok);
    EXPECT_TRUE(q.admit(kAlice, at(0)).ok);
    Admission a = q.admit(kAlice, at(0));
    EXPECT_FALSE(a.ok);
    EXPECT_EQ(a.limit, QuotaLimit::kConcurrency);
    EXPECT_GE(a.retry_after_s, 1);
    EXPECT_EQ(q.num_in_flight(kAlice), 2);
    EXPECT_TRUE(q.admit(kBob, at(0)).ok);
    q.release(kAlice);
    EXPECT_EQ(q.num_in_flight(kAlice), 1);
    EXPECT_TRUE(q.admit(kAlice, at(0)).ok);
    EXPECT_FALSE(q.admit(kAlice, at(0)).ok);
}

TEST(QuotaLimiterTest, LeaseReleasesOnDestructionAndMove) {
    QuotaLimiter q(QuotaConfig{.max_concurrent = 1});
    {
        LeaseResult r = acquire_lease(q, kAlice, at(0));
        ASSERT_TRUE(r.admission.ok);
        EXPECT_TRUE(r.lease.active());
        LeaseResult refused = acquire_lease(q, kAlice, at(0));
        EXPECT_FALSE(refused.admission.ok);
        EXPECT_FALSE(refused.lease.active());
        QuotaLease moved = std::move(r.lease);
        EXPECT_FALSE(r.lease.active());
        EXPECT_EQ(q.num_in_flight(kAlice), 1);
    }
    EXPECT_EQ(q.num_in_flight(kAlice), 0);
    LeaseResult again = acquire_lease(q, kAlice, at(0));
    EXPECT_TRUE(again.admission.ok);
    again.lease.reset();
    EXPECT_EQ(q.num_in_flight(kAlice), 0);
}

TEST(QuotaLimiterTest, IdleKeysAreDropped) {
    QuotaLimiter q(QuotaConfig{.requests_per_minute = 10, .tokens_per_minute = 100});
    admit_once(q, kAlice, at(0));
    q.record_tokens(kBob, 5, at(0));
    EXPECT_EQ(q.num_keys_tracked(), 2u);
    q.prune(at(30));
    EXPECT_EQ(q.num_keys_tracked(), 2u);
    q.prune(at(61));
    EXPECT_EQ(q.num_keys_tracked(), 0u);
}

TEST(QuotaLimiterTest, ConcurrentThreadsNeverExceedTheLimit) {
    constexpr int kLimit = 3;
    QuotaLimiter q(QuotaConfig{.max_concurrent = kLimit});
    std::atomic<int> running{0};
    std::atomic<int> max_running{0};
    std::atomic<int> num_admitted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 2000; ++i) {
                LeaseResult r = acquire_lease(q, kAlice, SteadyTime{});
                if (!r.admission.ok) continue;
                int now_running = ++running;
                int seen = max_running.load();
                while (now_running > seen && !max_running.compare_exchange_weak(seen, now_running)) {
                }
                ++num_admitted;
                --running;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_LE(max_running.load(), kLimit);
    EXPECT_GT(num_admitted.load(), 0);
    EXPECT_EQ(q.num_in_flight(kAlice), 0);
}

}  // namespace
}  // namespace hichat::api
