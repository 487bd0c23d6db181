#include "api/policy/quota_limiter.h"

#include "base/check.h"

namespace hichat::api {
namespace {

constexpr std::chrono::seconds kWindow{60};
constexpr std::chrono::seconds kTokenBinWidth{1};

// Whole seconds until `when`, rounded up, at least 1 (Retry-After carries integer seconds).
int seconds_until(SteadyTime when, SteadyTime now) {
    auto wait = std::chrono::ceil<std::chrono::seconds>(when - now);
    return wait.count() < 1 ? 1 : static_cast<int>(wait.count());
}

Admission refuse(QuotaLimit limit, std::string reason, int retry_after_s) {
    return {.ok = false, .limit = limit, .reason = std::move(reason), .retry_after_s = retry_after_s};
}

}  // namespace

QuotaLimiter::QuotaLimiter(QuotaConfig config) : config_(config) {
    CHECK(config_.validate().ok()) << config_.validate().message();
}

void QuotaLimiter::expire(KeyState& state, SteadyTime now) const {
    while (!state.admitted.empty() && state.admitted.front() + kWindow <= now) state.admitted.pop_front();
    while (!state.token_bins.empty() && state.token_bins.front().last + kWindow <= now) {
        state.num_tokens_in_window -= state.token_bins.front().num_tokens;
        state.token_bins.pop_front();
    }
}

Admission QuotaLimiter::check_requests(const KeyState& state, SteadyTime now) const {
    size_t limit = static_cast<size_t>(config_.requests_per_minute);
    if (limit == 0 || state.admitted.size() < limit) return {};
    // The window drops below the limit when the (size - limit + 1)-th oldest admission leaves it.
    SteadyTime frees_at = state.admitted[state.admitted.size() - limit] + kWindow;
    return refuse(QuotaLimit::kRequestsPerMinute,
                  "rate limit reached: " + std::to_string(limit) + " requests per minute",
                  seconds_until(frees_at, now));
}

Admission QuotaLimiter::check_tokens(const KeyState& state, SteadyTime now) const {
    int64_t limit = config_.tokens_per_minute;
    if (limit == 0 || state.num_tokens_in_window < limit) return {};
    int64_t num_tokens = state.num_tokens_in_window;
    SteadyTime frees_at = now;
    for (const TokenBin& bin : state.token_bins) {
        num_tokens -= bin.num_tokens;
        frees_at = bin.last + kWindow;
        if (num_tokens < limit) break;
    }
    return refuse(QuotaLimit::kTokensPerMinute,
                  "rate limit reached: " + std::to_string(limit) + " tokens per minute",
                  seconds_until(frees_at, now));
}

Admission QuotaLimiter::check_concurrency(const KeyState& state) const {
    int limit = config_.max_concurrent;
    if (limit == 0 || state.num_in_flight < limit) return {};
    // No way to know when a running request ends; 1 s is a polite poll interval.
    return refuse(QuotaLimit::kConcurrency,
                  "concurrency limit reached: " + std::to_string(limit) + " requests in flight", 1);
}

Admission QuotaLimiter::admit(const KeyId& key, SteadyTime now) {
    std::lock_guard lock(mutex_);
    if (++num_admits_since_prune_ >= kPruneInterval) prune_locked(now);
    KeyState& state = states_[key];
    expire(state, now);
    for (Admission a : {check_requests(state, now), check_tokens(state, now), check_concurrency(state)}) {
        if (!a.ok) return a;
    }
    if (config_.requests_per_minute > 0) state.admitted.push_back(now);
    ++state.num_in_flight;
    return {};
}

void QuotaLimiter::release(const KeyId& key) {
    std::lock_guard lock(mutex_);
    auto it = states_.find(key);
    CHECK(it != states_.end() && it->second.num_in_flight > 0) << "release without admit for " << key.value;
    --it->second.num_in_flight;
    drop_if_idle(key);
}

void QuotaLimiter::record_tokens(const KeyId& key, int64_t num_tokens, SteadyTime now) {
    CHECK_GE(num_tokens, 0) << key.value;
    if (config_.tokens_per_minute == 0 || num_tokens == 0) return;
    std::lock_guard lock(mutex_);
    KeyState& state = states_[key];
    expire(state, now);
    if (state.token_bins.empty() || now - state.token_bins.back().opened >= kTokenBinWidth) {
        state.token_bins.push_back({.opened = now, .last = now});
    }
    TokenBin& bin = state.token_bins.back();
    if (now > bin.last) bin.last = now;
    bin.num_tokens += num_tokens;
    state.num_tokens_in_window += num_tokens;
}

int QuotaLimiter::num_in_flight(const KeyId& key) const {
    std::lock_guard lock(mutex_);
    auto it = states_.find(key);
    return it == states_.end() ? 0 : it->second.num_in_flight;
}

size_t QuotaLimiter::num_keys_tracked() const {
    std::lock_guard lock(mutex_);
    return states_.size();
}

// Caller holds mutex_. Windows are only pruned lazily, so a key whose windows still hold entries stays.
void QuotaLimiter::drop_if_idle(const KeyId& key) {
    auto it = states_.find(key);
    if (it == states_.end()) return;
    const KeyState& s = it->second;
    if (s.num_in_flight == 0 && s.admitted.empty() && s.token_bins.empty()) states_.erase(it);
}

void QuotaLimiter::prune(SteadyTime now) {
    std::lock_guard lock(mutex_);
    prune_locked(now);
}

void QuotaLimiter::prune_locked(SteadyTime now) {
    num_admits_since_prune_ = 0;
    for (auto it = states_.begin(); it != states_.end();) {
        KeyState& s = it->second;
        expire(s, now);
        bool idle = s.num_in_flight == 0 && s.admitted.empty() && s.token_bins.empty();
        it = idle ? states_.erase(it) : std::next(it);
    }
}

}  // namespace hichat::api
