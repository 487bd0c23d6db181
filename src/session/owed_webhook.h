// OwedWebhook: a webhook event a store owes (issue 22's outbox). A batch's or a background response's
// final state is committed in one transaction with an owed row naming its event, when webhooks are
// configured; the row is cleared once the event's deliveries are in the webhook sender's own state
// db (api/webhooks/webhook_outbox.h). A server killed between the two finds the row at its next start
// and enqueues the event again, with the same webhook-id.
//
// The functions are the stores' (BatchStore and SessionStore each keep such a table, in their own
// file, under their own schema version); callers hold the store's mutex. Plain data otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::session {

class SqliteDb;

struct OwedWebhook {
    std::string object_id;      // "batch_..." or "resp_...": the event's data is {"id": object_id}
    std::string event_type;     // "batch.completed", "response.failed", ...; opaque to the store
    int64_t created_at_ms = 0;  // when the final state was written: the event's created_at
};

// "CREATE TABLE IF NOT EXISTS <table>(...);": primary key (object_id, event_type).
std::string owed_webhook_table_sql(std::string_view table);
// Inserts or replaces (the same object and event type: one row).
Status insert_owed_webhook(SqliteDb& db, std::string_view table, const OwedWebhook& owed);
// The rows of `object_id` ("": every row), oldest first.
Result<std::vector<OwedWebhook>> select_owed_webhooks(SqliteDb& db, std::string_view table,
                                                      const std::string& object_id);
// Deletes the row of (object_id, event_type); an absent row is no error.
Status delete_owed_webhook(SqliteDb& db, std::string_view table, const OwedWebhook& owed);

}  // namespace hichat::session
