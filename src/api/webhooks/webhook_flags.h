// parse_webhook_flags: WebhookConfig from the raw values of the `hichat serve` webhook flags (see
// webhook_sender.h); tools/serve_options.cpp calls it. The library reads no flags and no
// environment: the caller passes HICHAT_WEBHOOK_SECRET's value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/webhooks/webhook_config.h"
#include "base/status.h"

namespace hichat::api::webhooks {

struct WebhookFlagValues {
    std::vector<std::string> urls;  // --webhook-url, once per flag
    std::vector<std::string> allow; // --webhook-allow, once per flag; each may be a comma list
    std::string secret_file;        // --webhook-secret-file ("" when not given)
    std::string secret_env;         // the value of HICHAT_WEBHOOK_SECRET ("" when unset)
    std::string state_db;           // --webhook-state-db ("" when not given)
    int max_attempts = 0;           // --webhook-max-attempts (0 when not given: the default)
    int64_t retry_base_ms = 0;      // --webhook-retry-base-ms (0 when not given: the default)
};

// Errors name the flag: both or neither of the secret sources with a URL, an unreadable secret file,
// an empty allow entry, and everything WebhookConfig::validate() refuses (a URL whose host is not in
// --webhook-allow included). No URL and no other webhook flag: an empty config (webhooks off);
// webhook flags without a URL: an error naming the first such flag, as it would have no effect.
Result<WebhookConfig> parse_webhook_flags(const WebhookFlagValues& flags);

}  // namespace hichat::api::webhooks
