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
