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
// db is configured, so receivers can drop duplicates by id. An event a store owes (webhook_outbox.h)
// comes with its ids and time fixed by the caller (enqueue_fixed): enqueued again, after a restart, it
// is the same message, and it adds nothing while a delivery of it is still pending. Each attempt carries the attempt's
// webhook-timestamp and a fresh signature over it. 2xx: delivered. 410 Gone: the receiver asks us to
// stop; dropped. Any other status (3xx included: redirects are not followed), a connection error
// or a timeout: retried after RetryPolicy::delay_ms, up to max_attempts attempts.
//
// Threads: enqueue(), enqueue_to(), enqueue_fixed() and num_pending() from any thread; they never
// wait on the network or the disk. One worker thread runs an Asio io_context with every delivery,
// timer and state-db write; the observer and enqueue_fixed's on_stored run there. Ownership: owned by the server; destroying it stops the
// worker once the events enqueued before it are in the state db: attempts in flight are abandoned,
// and deliveries not finished stay in the state db (without one they are lost, and the count is
// logged).
#pragma once

#include <cstdint>
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

// An event whose identity the caller fixes, so that enqueuing it twice gives one message.
struct FixedEvent {
    std::string message_id;     // the webhook-id: "msg_" + 32 hex digits (message_id_for)
    std::string event_id;       // the body's "id": "evt_" + 32 hex digits (event_id_for)
    std::string event_type;
    std::string data_json;      // a JSON object
    int64_t created_at_ms = 0;  // Unix time; the body's created_at (in seconds)
};

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

    // Queues `event` for every configured target, except a target for which a delivery with the same
    // webhook-id is still pending (here or in the state db): that one is left as it is. `on_stored`
    // (may be empty) runs on the worker thread once every target's delivery is in the state db (in
    // memory without one) and before any of their attempts has ended; it does not run when a state-db
    // write failed or the event is refused. It may write a database, never wait on the network.
    // Returns the webhook-id. Errors as enqueue().
    Result<std::string> enqueue_fixed(const FixedEvent& event, std::function<void()> on_stored);

    size_t num_pending() const;  // deliveries not finished (queued, waiting to retry, in flight)

private:
    struct Impl;
    explicit WebhookSender(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace hichat::api::webhooks
