// QuotaConfig: per-key limits applied to every API key alike. 0 means unlimited.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace hichat::api {

struct QuotaConfig {
    int requests_per_minute = 0;   // admitted requests in any 60 s window (sliding log); 0: unlimited
    int64_t tokens_per_minute = 0; // prompt + generated tokens reported in any 60 s window; 0: unlimited
    int max_concurrent = 0;        // requests in flight at once; 0: unlimited

    bool unlimited() const { return requests_per_minute == 0 && tokens_per_minute == 0 && max_concurrent == 0; }

    // Errors: kInvalidArgument naming the negative field.
    Status validate() const;
};

}  // namespace hichat::api
