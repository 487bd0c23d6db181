// WebhookOutbox: hands the webhook events that the stores owe to the WebhookSender (issue 22).
//
// A batch's final state (BatchStore::finish_batch) and a background response's final row
// (SessionStore::put_response) are committed in one transaction with their event recorded as owed
// (session/owed_webhook.h), when webhooks are configured. The outbox enqueues each owed event with
// ids derived from (object id, event type) and the time recorded with it, and clears the owed row once
// the sender has the deliveries in its state db. Whatever moment the server is killed at, the event
// is either still owed (enqueued again by send_all_owed() at the next start, with the same webhook-id
// and body) or in the sender's state db (resumed by the sender): delivered at least once. Enqueued
// twice (killed after the sender stored it, before the row was cleared), the sender keeps one
// delivery; a receiver sees one webhook-id per event either way.
//
// An event that is not handed over when its object ends (the sender refused it: queue full; a store
// read failed) stays owed until the next start; nothing retries it before.
//
// Ownership: `hichat serve` owns it beside the sender; the stores and the sender must outlive every
// event it enqueued (the sender clears the rows from its worker thread). Threads: any, but not the
// engine thread (each call reads a store); stateless beyond its pointers.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace hichat::session {
class BatchStore;
class SessionStore;
}  // namespace hichat::session

namespace hichat::api::webhooks {

class WebhookSender;

struct EnqueuedEvent {
    std::string event_type;  // "batch.completed", ...
    std::string message_id;  // its webhook-id
};

class WebhookOutbox {
public:
    // Either store may be null: nothing is owed there.
    WebhookOutbox(WebhookSender& sender, session::BatchStore* batches, session::SessionStore* sessions);

    // The events owed for one batch / one background response, enqueued: the finished hooks' call,
    // after the final state is committed. Empty when nothing is owed (already enqueued, or written
    // without webhooks). Errors: the store's, or the sender's refusal (the event stays owed).
    Result<std::vector<EnqueuedEvent>> send_batch_event(const std::string& batch_id);
    Result<std::vector<EnqueuedEvent>> send_response_event(const std::string& response_id);

    // At start, before any new event: every event still owed (the last server stopped or was killed
    // before handing it over). Returns how many were enqueued; an event that fails is logged and
    // stays owed, the others go on.
    Result<int> send_all_owed();

private:
    WebhookSender& sender_;
    session::BatchStore* batches_;
    session::SessionStore* sessions_;
};

}  // namespace hichat::api::webhooks
