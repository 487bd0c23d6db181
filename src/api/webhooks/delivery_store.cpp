#include "api/webhooks/delivery_store.h"

#include "session/sqlite_db.h"

namespace hichat::api::webhooks {
namespace {

constexpr int kSchemaVersion = 1;  // PRAGMA user_version

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE webhook_deliveries(
  message_id TEXT NOT NULL, url TEXT NOT NULL, body TEXT NOT NULL, num_attempts INTEGER NOT NULL,
  next_attempt_at_ms INTEGER NOT NULL, PRIMARY KEY(message_id, url));
PRAGMA user_version = 1;
)sql";

Result<int64_t> single_integer(session::SqliteDb& db, std::string_view sql) {
    auto st = db.prepare(sql);
    HICHAT_RETURN_IF_ERROR(st.status());
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    return *row ? st->integer(0) : int64_t{0};
}

}  // namespace

DeliveryStore::DeliveryStore(std::unique_ptr<session::SqliteDb> db, std::string path)
    : db_(std::move(db)), path_(std::move(path)) {}
DeliveryStore::~DeliveryStore() = default;

Status DeliveryStore::with_path(const Status& s) const {
    return Status(s.code(), "webhook state database " + path_ + ": " + s.message());
}

Result<std::unique_ptr<DeliveryStore>> DeliveryStore::open(const std::string& path) {
    auto db = session::SqliteDb::open(path);
    if (!db.ok()) return invalid_argument("--webhook-state-db: " + db.status().message());
    std::unique_ptr<DeliveryStore> store(new DeliveryStore(std::move(db).value(), path));
    HICHAT_RETURN_IF_ERROR(store->check_and_create());
    return store;
}

// The first statement reads the file: one that is not a database fails here, before any write.
Status DeliveryStore::check_and_create() {
    auto num_tables = single_integer(*db_, "SELECT count(*) FROM sqlite_master WHERE type='table'");
    if (!num_tables.ok()) return with_path(invalid_argument("not a usable SQLite database (" + db_->error_message() + ")"));
    for (const char* pragma : {"PRAGMA busy_timeout=5000", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
        if (Status s = db_->exec(pragma); !s.ok()) return with_path(s);
    }
    auto version = single_integer(*db_, "PRAGMA user_version");
    HICHAT_RETURN_IF_ERROR(version.status());
    if (*version == kSchemaVersion) return ok_status();
    if (*version != 0) {
        return with_path(invalid_argument("schema version " + std::to_string(*version) + ", this HiChat reads version " +
                                          std::to_string(kSchemaVersion)));
    }
    if (*num_tables != 0) return with_path(invalid_argument("holds tables of another program; give another file"));
    Status s = db_->exec(std::string("BEGIN IMMEDIATE;") + kCreateSchema + "COMMIT;");
    if (!s.ok()) {
        (void)db_->exec("ROLLBACK");
        return with_path(s);
    }
    return ok_status();
}

Status DeliveryStore::insert(const PendingDelivery& d) {
    auto st = db_->prepare(
        "INSERT OR IGNORE INTO webhook_deliveries(message_id, url, body, num_attempts, next_attempt_at_ms) "
        "VALUES(?1, ?2, ?3, ?4, ?5)");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, d.message_id).bind(2, d.url).bind(3, d.body).bind(4, int64_t{d.num_attempts}).bind(5, d.next_attempt_at_ms);
    return st->run();
}

Status DeliveryStore::record_failure(const std::string& message_id, const std::string& url, int num_attempts,
                                     int64_t next_attempt_at_ms) {
    auto st = db_->prepare(
        "UPDATE webhook_deliveries SET num_attempts = ?3, next_attempt_at_ms = ?4 WHERE message_id = ?1 AND url = ?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, message_id).bind(2, url).bind(3, int64_t{num_attempts}).bind(4, next_attempt_at_ms);
    return st->run();
}

Status DeliveryStore::erase(const std::string& message_id, const std::string& url) {
    auto st = db_->prepare("DELETE FROM webhook_deliveries WHERE message_id = ?1 AND url = ?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, message_id).bind(2, url);
    return st->run();
}

Result<std::vector<PendingDelivery>> DeliveryStore::load_all() const {
    auto st = db_->prepare(
        "SELECT message_id, url, body, num_attempts, next_attempt_at_ms FROM webhook_deliveries "
        "ORDER BY next_attempt_at_ms");
    HICHAT_RETURN_IF_ERROR(st.status());
    std::vector<PendingDelivery> out;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return out;
        out.push_back({.message_id = st->text(0), .url = st->text(1), .body = st->text(2),
                       .num_attempts = static_cast<int>(st->integer(3)), .next_attempt_at_ms = st->integer(4)});
    }
}

}  // namespace hichat::api::webhooks
