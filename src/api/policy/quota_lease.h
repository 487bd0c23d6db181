// QuotaLease: RAII for the concurrency slot of a request that QuotaLimiter admitted.
#pragma once

#include <utility>

#include "api/policy/quota_limiter.h"

namespace hichat::api {

// RAII ownership of one admitted request's concurrency slot: releases it on destruction.
// Move-only. Construct only after admit() returned ok for the same key.
class QuotaLease {
public:
    QuotaLease() = default;
    QuotaLease(QuotaLimiter& limiter, KeyId key) : limiter_(&limiter), key_(std::move(key)) {}
    ~QuotaLease() { reset(); }
    QuotaLease(QuotaLease&& other) noexcept : limiter_(other.limiter_), key_(std::move(other.key_)) {
        other.limiter_ = nullptr;
    }
    QuotaLease& operator=(QuotaLease&& other) noexcept {
        if (this != &other) {
            reset();
            limiter_ = other.limiter_;
            key_ = std::move(other.key_);
            other.limiter_ = nullptr;
        }
        return *this;
    }
    QuotaLease(const QuotaLease&) = delete;
    QuotaLease& operator=(const QuotaLease&) = delete;

    bool active() const { return limiter_ != nullptr; }
    void reset() {
        if (limiter_ != nullptr) limiter_->release(key_);
        limiter_ = nullptr;
    }

private:
    QuotaLimiter* limiter_ = nullptr;
    KeyId key_;
};

struct LeaseResult {
    Admission admission;
    QuotaLease lease;  // active() exactly when admission.ok
};

// admit() plus, when admitted, the lease that releases the slot.
inline LeaseResult acquire_lease(QuotaLimiter& limiter, const KeyId& key, SteadyTime now) {
    LeaseResult result;
    result.admission = limiter.admit(key, now);
    if (result.admission.ok) result.lease = QuotaLease(limiter, key);
    return result;
}

}  // namespace hichat::api
