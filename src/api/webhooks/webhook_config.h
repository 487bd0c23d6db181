// WebhookConfig: where webhooks go, how they are signed and retried. Plain data; validated once by
// WebhookSender::start() (validate()), which refuses a target whose host --webhook-allow does not
// list, so a misconfigured server fails at start-up instead of at the first event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace hichat::api::webhooks {

// Delay before attempt n + 1 after n failed attempts: min(backoff_cap_ms, backoff_base_ms * 2^(n-1)),
// less a uniform random fraction in [0, jitter] of it (so that many deliveries failing together do
// not retry together).
struct RetryPolicy {
    int64_t backoff_base_ms = 5000;     // after the first failure
    int64_t backoff_cap_ms = 3'600'000; // the doubling stops here (1 h)
    double jitter = 0.2;                // in [0, 1); 0: exact delays (tests)
    int max_attempts = 12;              // per delivery, the first included; then it is given up
                                        // (5 s base, 1 h cap: about 4.5 h from first to last)

    // The delay in ms after `num_attempts_failed` (>= 1) failures; `random01` in [0, 1).
    int64_t delay_ms(int num_attempts_failed, double random01) const;
};

struct WebhookConfig {
    std::vector<std::string> target_urls;    // every event goes to each; http:// or https:// (--webhook-url)
    std::string secret;                      // "whsec_<base64 key>", 24-64 key bytes (--webhook-secret-file)
    std::vector<std::string> allowed_hosts;  // HostAllowList entries (--webhook-allow)
    RetryPolicy retry;
    int connect_timeout_ms = 5000;           // per attempt: DNS lookup + TCP connect
    int response_timeout_ms = 10000;         // per attempt: TLS handshake + request + response header
    std::string ca_file;                     // PEM CAs for https targets; empty: the system's store
    std::string state_db_path;               // SQLite file of pending deliveries, resumed at start;
                                             // empty: kept in memory only (lost on restart)
    size_t max_pending = 10000;              // deliveries queued, waiting or in flight; enqueue
                                             // refuses more

    // Errors name the flag or field: a target URL that does not parse or whose host the allow-list
    // does not list ("--webhook-allow"), a bad allow-list entry, a bad secret, retry and timeout
    // values out of range. An empty target list is valid (events then go only to enqueue_to URLs).
    Status validate() const;
};

}  // namespace hichat::api::webhooks
