#include "session/batch_store.h"

#include <chrono>

#include "session/sqlite_db.h"

namespace hichat::session {
namespace {

constexpr const char* kOutboxTable = "batch_webhook_outbox";  // owed_webhook.h; since version 2

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE batch_schema_version(version INTEGER NOT NULL);
CREATE TABLE files(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL, num_bytes INTEGER NOT NULL,
  filename TEXT NOT NULL, purpose TEXT NOT NULL);
CREATE TABLE batches(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL, endpoint TEXT NOT NULL,
  input_file_id TEXT NOT NULL, completion_window TEXT NOT NULL, metadata_json TEXT NOT NULL,
  status TEXT NOT NULL, errors_json TEXT NOT NULL, output_file_id TEXT NOT NULL, error_file_id TEXT NOT NULL,
  expires_at INTEGER NOT NULL, in_progress_at INTEGER NOT NULL, finalizing_at INTEGER NOT NULL,
  completed_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, expired_at INTEGER NOT NULL,
  cancelling_at INTEGER NOT NULL, cancelled_at INTEGER NOT NULL, num_requests_total INTEGER NOT NULL);
CREATE TABLE batch_results(
  batch_id TEXT NOT NULL, line INTEGER NOT NULL, ok INTEGER NOT NULL, result_json TEXT NOT NULL,
  PRIMARY KEY(batch_id, line)) WITHOUT ROWID;
)sql";  // and the outbox table (owed_webhook_table_sql)

constexpr const char* kFileColumns = "id, owner, created_at, num_bytes, filename, purpose";

// The counts come from the results: a line counts once its row is committed.
constexpr const char* kBatchColumns =
    "id, owner, created_at, endpoint, input_file_id, completion_window, metadata_json, status, errors_json, "
    "output_file_id, error_file_id, expires_at, in_progress_at, finalizing_at, completed_at, failed_at, expired_at, "
    "cancelling_at, cancelled_at, num_requests_total, "
    "(SELECT COUNT(*) FROM batch_results r WHERE r.batch_id = batches.id AND r.ok = 1), "
    "(SELECT COUNT(*) FROM batch_results r WHERE r.batch_id = batches.id AND r.ok = 0)";

constexpr BatchStatus kAllStatuses[] = {BatchStatus::kValidating, BatchStatus::kFailed,     BatchStatus::kInProgress,
                                        BatchStatus::kFinalizing, BatchStatus::kCompleted,  BatchStatus::kExpired,
                                        BatchStatus::kCancelling, BatchStatus::kCancelled};

// The column that keeps the time a batch entered `status` ("" for validating: created_at).
const char* status_time_column(BatchStatus status) {
    switch (status) {
        case BatchStatus::kValidating: return "";
        case BatchStatus::kFailed: return "failed_at";
        case BatchStatus::kInProgress: return "in_progress_at";
        case BatchStatus::kFinalizing: return "finalizing_at";
        case BatchStatus::kCompleted: return "completed_at";
        case BatchStatus::kExpired: return "expired_at";
        case BatchStatus::kCancelling: return "cancelling_at";
        case BatchStatus::kCancelled: return "cancelled_at";
    }
    return "";
}

BatchStatus status_from_name(std::string_view name) {
    for (BatchStatus s : kAllStatuses) {
        if (batch_status_name(s) == name) return s;
    }
    return BatchStatus::kFailed;  // a row this version cannot read stops rather than runs
}

StoredFile read_file(const Statement& st) {
    return {.id = st.text(0), .owner = st.text(1), .created_at = st.integer(2), .num_bytes = st.integer(3),
            .filename = st.text(4), .purpose = st.text(5)};
}

StoredBatch read_batch(const Statement& st) {
    StoredBatch b{.id = st.text(0), .owner = st.text(1), .created_at = st.integer(2), .endpoint = st.text(3),
                  .input_file_id = st.text(4), .completion_window = st.text(5), .metadata_json = st.text(6),
                  .status = status_from_name(st.text(7)), .errors_json = st.text(8), .output_file_id = st.text(9),
                  .error_file_id = st.text(10), .expires_at = st.integer(11)};
    b.in_progress_at = st.integer(12);
    b.finalizing_at = st.integer(13);
    b.completed_at = st.integer(14);
    b.failed_at = st.integer(15);
    b.expired_at = st.integer(16);
    b.cancelling_at = st.integer(17);
    b.cancelled_at = st.integer(18);
    b.num_requests_total = st.integer(19);
    b.num_requests_completed = st.integer(20);
    b.num_requests_failed = st.integer(21);
    return b;
}

// Rows of `table` owned by `owner`, newest first (by insertion), after the row `page.after`.
template <typename T, typename Read>
Result<ListOf<T>> list_rows(SqliteDb& db, const char* table, const char* columns, const std::string& owner,
                            const ListPage& page, Read read) {
    int64_t before_rowid = INT64_MAX;
    if (!page.after.empty()) {
        auto at = db.prepare(std::string("SELECT rowid FROM ") + table + " WHERE id=?1 AND owner=?2");
        HICHAT_RETURN_IF_ERROR(at.status());
        at->bind(1, page.after).bind(2, owner);
        auto row = at->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return not_found("after: no " + std::string(table) + " row " + page.after);
        before_rowid = at->integer(0);
    }
    auto st = db.prepare(std::string("SELECT ") + columns + " FROM " + table +
                         " WHERE owner=?1 AND rowid<?2 ORDER BY rowid DESC LIMIT ?3");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, owner).bind(2, before_rowid).bind(3, int64_t{page.limit} + 1);
    ListOf<T> list;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) break;
        if (static_cast<int>(list.items.size()) == page.limit) {
            list.has_more = true;
            break;
        }
        list.items.push_back(read(*st));
    }
    return list;
}

Status insert_file(SqliteDb& db, const StoredFile& f) {
    auto st = db.prepare(std::string("INSERT INTO files(") + kFileColumns + ") VALUES(?1,?2,?3,?4,?5,?6)");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, f.id).bind(2, f.owner).bind(3, f.created_at).bind(4, f.num_bytes).bind(5, f.filename);
    st->bind(6, f.purpose);
    return st->run();
}

Result<bool> insert_result(SqliteDb& db, const std::string& batch_id, const BatchLineResult& r) {
    auto st = db.prepare("INSERT OR IGNORE INTO batch_results(batch_id, line, ok, result_json) VALUES(?1,?2,?3,?4)");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, batch_id).bind(2, r.line).bind(3, int64_t{r.ok ? 1 : 0}).bind(4, r.result_json);
    HICHAT_RETURN_IF_ERROR(st->run());
    return db.changes() > 0;
}

}  // namespace

std::string_view batch_status_name(BatchStatus status) {
    switch (status) {
        case BatchStatus::kValidating: return "validating";
        case BatchStatus::kFailed: return "failed";
        case BatchStatus::kInProgress: return "in_progress";
        case BatchStatus::kFinalizing: return "finalizing";
        case BatchStatus::kCompleted: return "completed";
        case BatchStatus::kExpired: return "expired";
        case BatchStatus::kCancelling: return "cancelling";
        case BatchStatus::kCancelled: return "cancelled";
    }
    return "failed";
}

bool is_final(BatchStatus status) {
    return status == BatchStatus::kFailed || status == BatchStatus::kCompleted || status == BatchStatus::kExpired ||
           status == BatchStatus::kCancelled;
}

Status BatchStoreConfig::validate() const {
    if (path.empty()) return invalid_argument("batch database path is empty");
    return ok_status();
}

BatchStore::BatchStore(BatchStoreConfig config, std::unique_ptr<SqliteDb> db)
    : config_(std::move(config)), db_(std::move(db)) {}

BatchStore::~BatchStore() = default;

Result<std::unique_ptr<BatchStore>> BatchStore::open(BatchStoreConfig config) {
    HICHAT_RETURN_IF_ERROR(config.validate());
    auto db = SqliteDb::open(config.path);
    HICHAT_RETURN_IF_ERROR(db.status());
    std::unique_ptr<BatchStore> store(new BatchStore(std::move(config), std::move(db).value()));
    HICHAT_RETURN_IF_ERROR(store->check_and_migrate());
    return store;
}

Status BatchStore::check_and_migrate() {
    const std::string& path = config_.path;
    if (!db_->single_text("SELECT count(*) FROM sqlite_master").ok()) {
        return invalid_argument("batch database " + path + ": not a usable SQLite database (" + db_->error_message() + ")");
    }
    for (const char* pragma : {"PRAGMA busy_timeout=5000", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
        if (Status s = db_->exec(pragma); !s.ok()) return invalid_argument(s.message());
    }
    auto has_version =
        db_->single_text("SELECT name FROM sqlite_master WHERE type='table' AND name='batch_schema_version'");
    HICHAT_RETURN_IF_ERROR(has_version.status());
    if (has_version->empty()) {
        Status s = db_->exec(std::string("BEGIN IMMEDIATE;") + kCreateSchema + owed_webhook_table_sql(kOutboxTable) +
                             "INSERT INTO batch_schema_version VALUES(" + std::to_string(kSchemaVersion) + ");COMMIT;");
        if (!s.ok()) {
            (void)db_->exec("ROLLBACK");
            return invalid_argument("batch database " + path + ": cannot create the tables: " + s.message());
        }
        return ok_status();
    }
    auto version = db_->single_text("SELECT version FROM batch_schema_version");
    HICHAT_RETURN_IF_ERROR(version.status());
    if (*version == "1") return migrate_from(1);
    if (*version != std::to_string(kSchemaVersion)) {
        return invalid_argument("batch database " + path + ": batch schema version " +
                                (version->empty() ? std::string("missing") : *version) + ", this HiChat reads version " +
                                std::to_string(kSchemaVersion));
    }
    return ok_status();
}

// Version 1 -> 2: the webhook outbox table. Another server migrating the same file at once is not an
// error: the table is created if missing and the version moved only from 1.
Status BatchStore::migrate_from(int version) {
    if (version != 1) return invalid_argument("batch database " + config_.path + ": no migration from version " +
                                              std::to_string(version));
    Status s = db_->exec("BEGIN IMMEDIATE;" + owed_webhook_table_sql(kOutboxTable) + "UPDATE batch_schema_version SET version=" +
                         std::to_string(kSchemaVersion) + " WHERE version=1;COMMIT;");
    if (!s.ok()) {
        (void)db_->exec("ROLLBACK");
        return invalid_argument("batch database " + config_.path + ": cannot migrate it from batch schema version 1 to " +
                                std::to_string(kSchemaVersion) + ": " + s.message());
    }
    return ok_status();
}

int64_t BatchStore::now() const {
    if (config_.now_s) return config_.now_s();
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Status BatchStore::in_transaction_locked(const std::function<Status()>& body) {
    HICHAT_RETURN_IF_ERROR(db_->exec("BEGIN IMMEDIATE"));
    Status s = body();
    if (s.ok()) s = db_->exec("COMMIT");
    if (!s.ok()) (void)db_->exec("ROLLBACK");
    return s;
}

Status BatchStore::put_file(StoredFile f) {
    std::lock_guard lock(mu_);
    if (f.created_at == 0) f.created_at = now();
    return insert_file(*db_, f);
}

Result<std::optional<StoredFile>> BatchStore::get_file(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare(std::string("SELECT ") + kFileColumns + " FROM files WHERE id=?1 AND owner=?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id).bind(2, owner);
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    if (!*row) return std::optional<StoredFile>();
    return std::optional<StoredFile>(read_file(*st));
}

Result<bool> BatchStore::delete_file(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare("DELETE FROM files WHERE id=?1 AND owner=?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id).bind(2, owner);
    HICHAT_RETURN_IF_ERROR(st->run());
    return db_->changes() > 0;
}

Result<ListOf<StoredFile>> BatchStore::list_files(const std::string& owner, const ListPage& page) {
    std::lock_guard lock(mu_);
    return list_rows<StoredFile>(*db_, "files", kFileColumns, owner, page, read_file);
}

Status BatchStore::create_batch(StoredBatch b) {
    std::lock_guard lock(mu_);
    if (b.created_at == 0) b.created_at = now();
    auto st = db_->prepare(
        "INSERT INTO batches(id, owner, created_at, endpoint, input_file_id, completion_window, metadata_json, status, "
        "errors_json, output_file_id, error_file_id, expires_at, in_progress_at, finalizing_at, completed_at, failed_at, "
        "expired_at, cancelling_at, cancelled_at, num_requests_total) "
        "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,0,0,0,0,0,0,0,0)");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, b.id).bind(2, b.owner).bind(3, b.created_at).bind(4, b.endpoint).bind(5, b.input_file_id);
    st->bind(6, b.completion_window).bind(7, b.metadata_json).bind(8, batch_status_name(b.status));
    st->bind(9, b.errors_json).bind(10, b.output_file_id).bind(11, b.error_file_id).bind(12, b.expires_at);
    return st->run();
}

Result<std::optional<StoredBatch>> BatchStore::batch_locked(const std::string& id, const std::string* owner) {
    auto st = db_->prepare(std::string("SELECT ") + kBatchColumns + " FROM batches WHERE id=?1" +
                           (owner != nullptr ? " AND owner=?2" : ""));
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id);
    if (owner != nullptr) st->bind(2, *owner);
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    if (!*row) return std::optional<StoredBatch>();
    return std::optional<StoredBatch>(read_batch(*st));
}

Result<std::optional<StoredBatch>> BatchStore::get_batch(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    return batch_locked(id, &owner);
}

Result<std::optional<StoredBatch>> BatchStore::batch(const std::string& id) {
    std::lock_guard lock(mu_);
    return batch_locked(id, nullptr);
}

Result<ListOf<StoredBatch>> BatchStore::list_batches(const std::string& owner, const ListPage& page) {
    std::lock_guard lock(mu_);
    return list_rows<StoredBatch>(*db_, "batches", kBatchColumns, owner, page, read_batch);
}

Result<bool> BatchStore::set_status_locked(const std::string& id, BatchStatus from, BatchStatus to) {
    auto st = db_->prepare(std::string("UPDATE batches SET status=?1, ") + status_time_column(to) +
                           "=?2 WHERE id=?3 AND status=?4");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, batch_status_name(to)).bind(2, now()).bind(3, id).bind(4, batch_status_name(from));
    HICHAT_RETURN_IF_ERROR(st->run());
    return db_->changes() > 0;
}

Result<std::optional<StoredBatch>> BatchStore::cancel_batch(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    auto b = batch_locked(id, &owner);
    HICHAT_RETURN_IF_ERROR(b.status());
    if (!b->has_value()) return b;
    if ((*b)->status != BatchStatus::kValidating && (*b)->status != BatchStatus::kInProgress) return b;
    HICHAT_RETURN_IF_ERROR(set_status_locked(id, (*b)->status, BatchStatus::kCancelling).status());
    return batch_locked(id, &owner);
}

Result<std::vector<StoredBatch>> BatchStore::unfinished_batches() {
    std::lock_guard lock(mu_);
    auto st = db_->prepare(std::string("SELECT ") + kBatchColumns +
                           " FROM batches WHERE status IN ('validating','in_progress','finalizing','cancelling') "
                           "ORDER BY rowid ASC");
    HICHAT_RETURN_IF_ERROR(st.status());
    std::vector<StoredBatch> out;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return out;
        out.push_back(read_batch(*st));
    }
}

Result<bool> BatchStore::start_batch(const std::string& id, int64_t num_requests_total,
                                     const std::vector<BatchLineResult>& refused) {
    std::lock_guard lock(mu_);
    bool started = false;
    Status s = in_transaction_locked([&]() -> Status {
        auto moved = set_status_locked(id, BatchStatus::kValidating, BatchStatus::kInProgress);
        HICHAT_RETURN_IF_ERROR(moved.status());
        if (!*moved) return ok_status();
        started = true;
        auto st = db_->prepare("UPDATE batches SET num_requests_total=?1 WHERE id=?2");
        HICHAT_RETURN_IF_ERROR(st.status());
        st->bind(1, num_requests_total).bind(2, id);
        HICHAT_RETURN_IF_ERROR(st->run());
        for (const BatchLineResult& r : refused) HICHAT_RETURN_IF_ERROR(insert_result(*db_, id, r).status());
        return ok_status();
    });
    HICHAT_RETURN_IF_ERROR(s);
    return started;
}

Result<bool> BatchStore::advance(const std::string& id, BatchStatus from, BatchStatus to) {
    std::lock_guard lock(mu_);
    return set_status_locked(id, from, to);
}

Status BatchStore::finish_batch(const std::string& id, const BatchEnd& end) {
    if (!is_final(end.status)) {
        return invalid_argument("finish_batch: " + std::string(batch_status_name(end.status)) + " is not a final state");
    }
    std::lock_guard lock(mu_);
    return in_transaction_locked([&]() -> Status {
        for (StoredFile f : end.files) {
            if (f.created_at == 0) f.created_at = now();
            HICHAT_RETURN_IF_ERROR(insert_file(*db_, f));
        }
        auto st = db_->prepare(std::string("UPDATE batches SET status=?1, ") + status_time_column(end.status) +
                               "=?2, output_file_id=?3, error_file_id=?4, errors_json=CASE WHEN ?5='' THEN errors_json "
                               "ELSE ?5 END WHERE id=?6");
        HICHAT_RETURN_IF_ERROR(st.status());
        st->bind(1, batch_status_name(end.status)).bind(2, now()).bind(3, end.output_file_id);
        st->bind(4, end.error_file_id).bind(5, end.errors_json).bind(6, id);
        HICHAT_RETURN_IF_ERROR(st->run());
        if (!end.webhook) return ok_status();
        return insert_owed_webhook(*db_, kOutboxTable, *end.webhook);
    });
}

Result<std::vector<OwedWebhook>> BatchStore::owed_webhooks(const std::string& batch_id) {
    std::lock_guard lock(mu_);
    return select_owed_webhooks(*db_, kOutboxTable, batch_id);
}

Status BatchStore::clear_owed_webhook(const OwedWebhook& owed) {
    std::lock_guard lock(mu_);
    return delete_owed_webhook(*db_, kOutboxTable, owed);
}

Result<bool> BatchStore::record_result(const std::string& batch_id, const BatchLineResult& r) {
    std::lock_guard lock(mu_);
    return insert_result(*db_, batch_id, r);
}

Result<std::vector<int64_t>> BatchStore::finished_lines(const std::string& batch_id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare("SELECT line FROM batch_results WHERE batch_id=?1 ORDER BY line");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, batch_id);
    std::vector<int64_t> lines;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return lines;
        lines.push_back(st->integer(0));
    }
}

Result<std::vector<BatchLineResult>> BatchStore::results(const std::string& batch_id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare("SELECT line, ok, result_json FROM batch_results WHERE batch_id=?1 ORDER BY line");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, batch_id);
    std::vector<BatchLineResult> out;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return out;
        out.push_back({.line = st->integer(0), .ok = st->integer(1) != 0, .result_json = st->text(2)});
    }
}

}  // namespace hichat::session
