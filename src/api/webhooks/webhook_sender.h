// WebhookSender: delivers events (batch completed, background response finished, ...) as signed
// Standard Webhooks POSTs, at least once, retried with exponential backoff.
//
// Flags (read by `hichat serve` only, style rule 11; parsed by webhook_flags.h; the server sends the
// Batch API's batch.completed / batch.failed / batch.cancelled / batch.expired events and the
// background responses' response.completed / .incomplete / .failed / .cancelled):
//   --webhook-url URL            a target for every event (repeatable); http:// or https://
//   --webhook-secret-file PATH   "whsec_<base64>" secret (or the environment's HICHAT_WEBHOOK_SECRET)
//   --webhook-allow HOST[,HOST]  the only hosts a webhook may go to: exact names, "*.example.com",
//                                IP literals. A target outside it is a start-up error; one given
//                                with an event is refused and never contacted
//   --webhook-max-attempts N     attempts per delivery before it is given up (default 12)
//   --webhook-retry-base-ms MS   delay before the first retry, doubling after each (default 5000)
//   --webhook-state-db PATH      SQLite file of pending deliveries, resumed after a restart
//                                (serve's default: <session db>-webhooks.db beside it)
//
// A delivery is one (event, target URL). Its body and webhook-id ("msg_" + 32 hex digits) are
// fixed when the event is enqueued and the same on every attempt, also after a restart when a state
// db is configured, so receivers can drop duplicates by id. Each attempt carries the attempt's
// webhook-timestamp and a fresh signature over it. 2xx: delivered. 410 Gone: the receiver asks us to
// stop; dropped. Any other status (3xx included: redirects are not followed), a connection error
// or a timeout: retried after RetryPolicy::delay_ms, up to max_attempts attempts.
//
// Threads: enqueue(), enqueue_to() and num_pending() from any thread; they never wait on the
// network or the disk. One worker thread runs an Asio io_context with every delivery, timer and
// state-db write; the observer runs there. Ownership: owned by the server; destroying it stops the
// worker once the events enqueued before it are in the state db: attempts in flight are abandoned,
// and deliveries not finished stay in the state db (without one they are lost, and the count is
// logged).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/webhooks/webhook_config.h"
#include "base/status.h"

namespace hichat::api::webhooks {

enum class DeliveryState {
    kRetrying,   // an attempt failed; another is scheduled
    kDelivered,  // a 2xx answer
    kGone,       // 410: not retried
    kGaveUp,     // max_attempts attempts failed
};

struct DeliveryReport {
    DeliveryState state = DeliveryState::kRetrying;
    std::string message_id;
    std::string url;
    int num_attempts = 0;     // made so far, across restarts
    int http_status = 0;      // of the last attempt; 0 when it got no answer
    std::string error;        // the last attempt's failure ("" when it got an answer)
};

// Runs on the worker thread after every attempt; must not block.
using DeliveryObserver = std::function<void(const DeliveryReport&)>;

class WebhookSender {
public:
    // Validates `config` (errors name the flag, e.g. a target host not in --webhook-allow), opens
    // the state db and starts the worker, which resumes the deliveries found there.
    static Result<std::unique_ptr<WebhookSender>> start(const WebhookConfig& config, DeliveryObserver observer = {});
    ~WebhookSender();
    WebhookSender(const WebhookSender&) = delete;
    WebhookSender& operator=(const WebhookSender&) = delete;

    // Queues `event_type` with `data_json` (a JSON object) for every configured target and returns
    // the webhook-id. The body is OpenAI's event object: {"object": "event", "id": "evt_...", "type":
    // event_type, "created_at": <unix seconds>, "data": ...}.
    // Errors: an event type outside [a-z0-9._-], data that is not a JSON object, no target
    // configured, max_pending deliveries already pending.
    Result<std::string> enqueue(std::string_view event_type, std::string_view data_json);

    // The same to one URL that came with the event (e.g. a per-request callback). A URL whose host
    // is not in --webhook-allow is refused here, before any DNS lookup or connection: the Status
    // names the host and the flag, and one warning line is logged.
    Result<std::string> enqueue_to(std::string_view url, std::string_view event_type, std::string_view data_json);

    size_t num_pending() const;  // deliveries not finished (queued, waiting to retry, in flight)

private:
    struct Impl;
    explicit WebhookSender(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace hichat::api::webhooks
