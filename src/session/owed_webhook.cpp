#include "session/owed_webhook.h"

#include "session/sqlite_db.h"

namespace hichat::session {

std::string owed_webhook_table_sql(std::string_view table) {
    return "CREATE TABLE IF NOT EXISTS " + std::string(table) +
           "(object_id TEXT NOT NULL, event_type TEXT NOT NULL, created_at_ms INTEGER NOT NULL, "
           "PRIMARY KEY(object_id, event_type));";
}

Status insert_owed_webhook(SqliteDb& db, std::string_view table, const OwedWebhook& owed) {
    auto st = db.prepare("INSERT OR REPLACE INTO " + std::string(table) +
                         "(object_id, event_type, created_at_ms) VALUES(?1,?2,?3)");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, owed.object_id).bind(2, owed.event_type).bind(3, owed.created_at_ms);
    return st->run();
}

Result<std::vector<OwedWebhook>> select_owed_webhooks(SqliteDb& db, std::string_view table,
                                                      const std::string& object_id) {
    auto st = db.prepare("SELECT object_id, event_type, created_at_ms FROM " + std::string(table) +
                         (object_id.empty() ? "" : " WHERE object_id=?1") + " ORDER BY created_at_ms, rowid");
    HICHAT_RETURN_IF_ERROR(st.status());
    if (!object_id.empty()) st->bind(1, object_id);
    std::vector<OwedWebhook> out;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return out;
        out.push_back({.object_id = st->text(0), .event_type = st->text(1), .created_at_ms = st->integer(2)});
    }
}

Status delete_owed_webhook(SqliteDb& db, std::string_view table, const OwedWebhook& owed) {
    auto st = db.prepare("DELETE FROM " + std::string(table) + " WHERE object_id=?1 AND event_type=?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, owed.object_id).bind(2, owed.event_type);
    return st->run();
}

}  // namespace hichat::session
