// QuotaLimiter: per-key requests/minute, tokens/minute and concurrency limits.
// Thread-safe: HTTP threads call admit/release/record_tokens concurrently (one mutex, short sections).
// Time is passed in so that tests can drive it; callers pass std::chrono::steady_clock::now().
//
// Windows. Requests per minute is a sliding log: a request is admitted while fewer than
// requests_per_minute requests were admitted in the last 60 s. Tokens per minute is a sliding window
// over reported tokens, kept in bins of at most 1 s (so memory per key stays bounded); a bin leaves the
// window 60 s after its last token, which errs on the strict side by under 1 s. Tokens are counted as
// they are reported, so a running request may overshoot; later admissions wait until the window's sum
// is below the limit again.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "api/policy/key_id.h"
#include "api/policy/quota_config.h"

namespace hichat::api {

using SteadyTime = std::chrono::steady_clock::time_point;

enum class QuotaLimit { kNone, kRequestsPerMinute, kTokensPerMinute, kConcurrency };

struct Admission {
    bool ok = true;
    QuotaLimit limit = QuotaLimit::kNone;  // which limit refused; kNone when ok
    std::string reason;                    // client-facing text for a 429; empty when ok
    int retry_after_s = 0;                 // whole seconds for the Retry-After header; >= 1 when refused
};

class QuotaLimiter {
public:
    explicit QuotaLimiter(QuotaConfig config);  // config must be valid (validate() checked by caller)

    // Admits one request for `key` or says which limit refuses it. An admitted request holds one
    // concurrency slot until release(key); a refused one changes nothing.
    Admission admit(const KeyId& key, SteadyTime now);

    // Ends an admitted request. CHECKs that the key has one in flight.
    void release(const KeyId& key);

    // Adds tokens (prompt or generated) to the key's tokens-per-minute window.
    void record_tokens(const KeyId& key, int64_t num_tokens, SteadyTime now);

    // Expires every key's windows and drops idle keys. admit() also does this every kPruneInterval calls,
    // so state stays bounded by the keys active in the last minute.
    void prune(SteadyTime now);

    // Requests of `key` admitted and not yet released.
    int num_in_flight(const KeyId& key) const;

    // Keys with state held (in flight or inside a window); idle keys are dropped.
    size_t num_keys_tracked() const;

    const QuotaConfig& config() const { return config_; }

private:
    struct TokenBin {
        SteadyTime opened;    // time of the first token in the bin
        SteadyTime last;      // time of the latest token; the bin expires 60 s after it
        int64_t num_tokens = 0;
    };
    struct KeyState {
        std::deque<SteadyTime> admitted;  // [<= requests_per_minute] admission times inside the window
        std::deque<TokenBin> token_bins;  // [<= ~61] oldest first
        int64_t num_tokens_in_window = 0; // sum of token_bins
        int num_in_flight = 0;
    };

    void expire(KeyState& state, SteadyTime now) const;
    Admission check_requests(const KeyState& state, SteadyTime now) const;
    Admission check_tokens(const KeyState& state, SteadyTime now) const;
    Admission check_concurrency(const KeyState& state) const;
    void drop_if_idle(const KeyId& key);
    void prune_locked(SteadyTime now);

    static constexpr int kPruneInterval = 256;  // admit() calls between full sweeps

    const QuotaConfig config_;
    mutable std::mutex mutex_;
    std::map<KeyId, KeyState> states_;  // guarded by mutex_
    int num_admits_since_prune_ = 0;    // guarded by mutex_
};

}  // namespace hichat::api
