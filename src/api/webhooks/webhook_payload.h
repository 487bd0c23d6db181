// The parts of a webhook message that are fixed when an event is enqueued: its id and its body.
// Pure functions (new_message_id draws from OpenSSL's CSPRNG); any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace hichat::api::webhooks {

// "msg_" + 32 lower-case hex digits (128 random bits): the webhook-id header.
std::string new_message_id();
// "evt_" + 32 lower-case hex digits (128 random bits): the event object's id, as OpenAI's.
std::string new_event_id();

// The same shapes, derived from what the event is about instead of drawn: the first 128 bits of
// SHA-256 over (a tag, object_id, event_type). An owed event (webhook_outbox.h) enqueued again after
// a restart gets the same webhook-id and event id, so the sender and the receiver see one event.
std::string message_id_for(std::string_view object_id, std::string_view event_type);
std::string event_id_for(std::string_view object_id, std::string_view event_type);

// "2026-05-01T12:34:56.789Z" for a Unix time in ms (UTC, millisecond precision).
std::string iso8601_utc(int64_t unix_ms);

// Event types are short dotted names such as "batch.completed" or "response.completed": 1 to 64
// characters of [a-z0-9._-]. The error names the type.
Status check_event_type(std::string_view event_type);

// OpenAI's webhook event object: {"object": "event", "id": event_id, "type": event_type,
// "created_at": unix seconds, "data": <data_json>} in that key order, compact. Errors: a bad event
// type, data_json that is not one JSON object.
Result<std::string> make_payload(std::string_view event_type, std::string_view data_json, int64_t unix_ms,
                                 std::string_view event_id);

}  // namespace hichat::api::webhooks
