#include "api/webhooks/webhook_outbox.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "api/webhooks/webhook_payload.h"
#include "api/webhooks/webhook_sender.h"
#include "session/batch_store.h"
#include "session/session_store.h"

namespace hichat::api::webhooks {
namespace {

spdlog::logger& logger() {
    static const auto log = std::make_shared<spdlog::logger>("webhooks", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    return *log;
}

// Enqueues one owed event of `store` (BatchStore or SessionStore); the sender's worker clears the owed
// row once the deliveries are stored. A failed clear is logged: the event is enqueued again (the same
// webhook-id) at the next start.
template <typename Store>
Result<EnqueuedEvent> send_owed(WebhookSender& sender, Store& store, const session::OwedWebhook& owed) {
    const FixedEvent event{.message_id = message_id_for(owed.object_id, owed.event_type),
                           .event_id = event_id_for(owed.object_id, owed.event_type),
                           .event_type = owed.event_type,
                           .data_json = nlohmann::json{{"id", owed.object_id}}.dump(),
                           .created_at_ms = owed.created_at_ms};
    auto id = sender.enqueue_fixed(event, [&store, owed] {
        if (Status s = store.clear_owed_webhook(owed); !s.ok()) {
            logger().warn("webhook {} of {}: queued, but still marked owed ({}); sent again at the next start",
                          owed.event_type, owed.object_id, s.message());
        }
    });
    HICHAT_RETURN_IF_ERROR(id.status());
    return EnqueuedEvent{.event_type = owed.event_type, .message_id = *id};
}

template <typename Store>
Result<std::vector<EnqueuedEvent>> send_owed_of(WebhookSender& sender, Store* store, const std::string& object_id) {
    std::vector<EnqueuedEvent> sent;
    if (store == nullptr) return sent;
    auto owed = store->owed_webhooks(object_id);
    HICHAT_RETURN_IF_ERROR(owed.status());
    for (const session::OwedWebhook& o : *owed) {
        auto event = send_owed(sender, *store, o);
        HICHAT_RETURN_IF_ERROR(event.status());
        sent.push_back(std::move(event).value());
    }
    return sent;
}

template <typename Store>
Result<int> send_every_owed(WebhookSender& sender, Store* store) {
    if (store == nullptr) return 0;
    auto owed = store->owed_webhooks();
    HICHAT_RETURN_IF_ERROR(owed.status());
    int num_sent = 0;
    for (const session::OwedWebhook& o : *owed) {
        auto event = send_owed(sender, *store, o);
        if (!event.ok()) {
            logger().warn("webhook {} of {} still owed: {}", o.event_type, o.object_id, event.status().message());
            continue;
        }
        ++num_sent;
    }
    return num_sent;
}

}  // namespace

WebhookOutbox::WebhookOutbox(WebhookSender& sender, session::BatchStore* batches, session::SessionStore* sessions)
    : sender_(sender), batches_(batches), sessions_(sessions) {}

Result<std::vector<EnqueuedEvent>> WebhookOutbox::send_batch_event(const std::string& batch_id) {
    if (batch_id.empty()) return std::vector<EnqueuedEvent>();  // "" would mean every batch
    return send_owed_of(sender_, batches_, batch_id);
}

Result<std::vector<EnqueuedEvent>> WebhookOutbox::send_response_event(const std::string& response_id) {
    if (response_id.empty()) return std::vector<EnqueuedEvent>();
    return send_owed_of(sender_, sessions_, response_id);
}

Result<int> WebhookOutbox::send_all_owed() {
    auto num_batches = send_every_owed(sender_, batches_);
    HICHAT_RETURN_IF_ERROR(num_batches.status());
    auto num_responses = send_every_owed(sender_, sessions_);
    HICHAT_RETURN_IF_ERROR(num_responses.status());
    return *num_batches + *num_responses;
}

}  // namespace hichat::api::webhooks
