#include "api/webhooks/webhook_config.h"

#include <algorithm>
#include <cmath>

#include "api/http/url.h"
#include "api/webhooks/host_allow_list.h"
#include "api/webhooks/webhook_signer.h"

namespace hichat::api::webhooks {

int64_t RetryPolicy::delay_ms(int num_attempts_failed, double random01) const {
    int64_t delay = backoff_base_ms;
    for (int i = 1; i < num_attempts_failed && delay < backoff_cap_ms; ++i) delay *= 2;
    delay = std::min(delay, backoff_cap_ms);
    return delay - static_cast<int64_t>(std::floor(static_cast<double>(delay) * jitter * random01));
}

Status WebhookConfig::validate() const {
    auto allow = HostAllowList::parse(allowed_hosts);
    HICHAT_RETURN_IF_ERROR(allow.status());
    for (const std::string& text : target_urls) {
        auto url = parse_url(text);
        if (!url.ok()) return invalid_argument("--webhook-url: " + url.status().message());
        if (!allow->allows(url->host)) {
            return invalid_argument("--webhook-url: host '" + url->host + "' is not in --webhook-allow");
        }
    }
    if (auto signer = WebhookSigner::from_secret(secret); !signer.ok()) {
        return invalid_argument("--webhook-secret-file: " + signer.status().message());
    }
    if (retry.backoff_base_ms < 1) return invalid_argument("webhook backoff base must be at least 1 ms");
    if (retry.backoff_cap_ms < retry.backoff_base_ms) {
        return invalid_argument("webhook backoff cap (" + std::to_string(retry.backoff_cap_ms) +
                                " ms) is below its base (" + std::to_string(retry.backoff_base_ms) + " ms)");
    }
    if (!(retry.jitter >= 0.0 && retry.jitter < 1.0)) return invalid_argument("webhook retry jitter must be in [0, 1)");
    if (retry.max_attempts < 1 || retry.max_attempts > 100) {
        return invalid_argument("--webhook-max-attempts must be in [1, 100], got " + std::to_string(retry.max_attempts));
    }
    if (connect_timeout_ms <= 0 || response_timeout_ms <= 0) return invalid_argument("webhook timeouts must be positive");
    if (max_pending < 1) return invalid_argument("webhook max_pending must be at least 1");
    return ok_status();
}

}  // namespace hichat::api::webhooks
