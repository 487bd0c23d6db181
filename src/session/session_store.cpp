#include "session/session_store.h"

#include <chrono>

#include "session/sqlite_db.h"
#include "session/token_blob.h"

namespace hichat::session {
namespace {

constexpr const char* kOutboxTable = "response_webhook_outbox";  // owed_webhook.h; since version 2

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL);
CREATE TABLE responses(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL, model TEXT NOT NULL,
  response_json TEXT NOT NULL, input_items_json TEXT NOT NULL, context_json TEXT NOT NULL,
  prompt_ids BLOB NOT NULL, output_ids BLOB NOT NULL, previous_response_id TEXT NOT NULL,
  conversation_id TEXT NOT NULL, model_fingerprint TEXT NOT NULL);
CREATE INDEX responses_by_age ON responses(created_at);
CREATE TABLE conversations(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  metadata_json TEXT NOT NULL, context_json TEXT NOT NULL);
CREATE INDEX conversations_by_age ON conversations(updated_at);
CREATE TABLE conversation_items(
  conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, item_id TEXT NOT NULL, item_json TEXT NOT NULL,
  token_ids BLOB, PRIMARY KEY(conversation_id, seq));
CREATE UNIQUE INDEX items_by_id ON conversation_items(conversation_id, item_id);
)sql";  // and the outbox table (owed_webhook_table_sql)

constexpr const char* kResponseColumns =
    "id, owner, created_at, model, response_json, input_items_json, context_json, prompt_ids, output_ids, "
    "previous_response_id, conversation_id, model_fingerprint";

Status with_path(const std::string& path, const Status& s, const std::string& what) {
    return Status(s.code(), "session database " + path + ": " + what + ": " + s.message());
}

Result<StoredResponse> read_response(const Statement& st, const std::string& path) {
    StoredResponse r{.id = st.text(0), .owner = st.text(1), .created_at = st.integer(2), .model = st.text(3),
                     .response_json = st.text(4), .input_items_json = st.text(5), .context_json = st.text(6)};
    auto prompt = token_ids_from_blob(st.blob(7));
    auto output = token_ids_from_blob(st.blob(8));
    if (!prompt || !output) return data_loss("session database " + path + ": response " + r.id + " has damaged token ids");
    r.prompt_ids = std::move(*prompt);
    r.output_ids = std::move(*output);
    r.previous_response_id = st.text(9);
    r.conversation_id = st.text(10);
    r.model_fingerprint = st.text(11);
    return r;
}

ConversationItem read_item(const Statement& st) {
    ConversationItem item{.item_id = st.text(0), .seq = st.integer(1), .item_json = st.text(2)};
    if (!st.is_null(3)) item.token_ids = token_ids_from_blob(st.blob(3));
    return item;
}

}  // namespace

Status SessionStoreConfig::validate() const {
    if (path.empty()) return invalid_argument("session database path is empty");
    if (ttl_s < 0) return invalid_argument("session TTL must be >= 0 seconds, got " + std::to_string(ttl_s));
    if (max_rows < 1) return invalid_argument("session row cap must be >= 1, got " + std::to_string(max_rows));
    if (sweep_interval_s < 0) return invalid_argument("session sweep interval must be >= 0");
    return ok_status();
}

SessionStore::SessionStore(SessionStoreConfig config, std::unique_ptr<SqliteDb> db)
    : config_(std::move(config)), db_(std::move(db)) {}

SessionStore::~SessionStore() = default;

Result<std::unique_ptr<SessionStore>> SessionStore::open(SessionStoreConfig config) {
    HICHAT_RETURN_IF_ERROR(config.validate());
    auto db = SqliteDb::open(config.path);
    HICHAT_RETURN_IF_ERROR(db.status());
    std::unique_ptr<SessionStore> store(new SessionStore(std::move(config), std::move(db).value()));
    HICHAT_RETURN_IF_ERROR(store->check_and_migrate());
    store->last_sweep_s_ = store->now();
    return store;
}

// The first statement reads the file: a file that is not a database fails here, before anything is written.
Status SessionStore::check_and_migrate() {
    const std::string& path = config_.path;
    auto check = db_->single_text("PRAGMA quick_check");
    if (!check.ok()) return invalid_argument("session database " + path + ": not a usable SQLite database (" +
                                             db_->error_message() + ")");
    if (*check != "ok") return data_loss("session database " + path + ": fails SQLite's quick_check: " + *check);
    for (const char* pragma : {"PRAGMA busy_timeout=5000", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}) {
        if (Status s = db_->exec(pragma); !s.ok()) return invalid_argument(s.message());
    }
    auto has_version = db_->single_text("SELECT name FROM sqlite_master WHERE type='table' AND name='schema_version'");
    auto any_table = db_->single_text("SELECT name FROM sqlite_master WHERE type='table' LIMIT 1");
    HICHAT_RETURN_IF_ERROR(has_version.status());
    HICHAT_RETURN_IF_ERROR(any_table.status());
    if (has_version->empty() && !any_table->empty()) {
        return invalid_argument("session database " + path + ": holds tables of another program (table '" +
                                *any_table + "', no schema_version table); give --session-db another file");
    }
    if (has_version->empty()) {
        Status s = db_->exec(std::string("BEGIN IMMEDIATE;") + kCreateSchema + owed_webhook_table_sql(kOutboxTable) +
                             "INSERT INTO schema_version VALUES(" + std::to_string(kSchemaVersion) + ");COMMIT;");
        if (!s.ok()) {
            (void)db_->exec("ROLLBACK");
            return invalid_argument(with_path(path, s, "cannot create the tables").message());
        }
        return ok_status();
    }
    auto version = db_->single_text("SELECT version FROM schema_version");
    HICHAT_RETURN_IF_ERROR(version.status());
    if (*version == "1") return migrate_from(1);
    if (*version != std::to_string(kSchemaVersion)) {
        return invalid_argument("session database " + path + ": schema version " +
                                (version->empty() ? std::string("missing") : *version) + ", this HiChat reads version " +
                                std::to_string(kSchemaVersion));
    }
    return ok_status();
}

// Version 1 -> 2: the webhook outbox table. Another server migrating the same file at once is not an
// error: the table is created if missing and the version moved only from 1.
Status SessionStore::migrate_from(int version) {
    if (version != 1) return invalid_argument("session database " + config_.path + ": no migration from version " +
                                              std::to_string(version));
    Status s = db_->exec("BEGIN IMMEDIATE;" + owed_webhook_table_sql(kOutboxTable) +
                         "UPDATE schema_version SET version=" + std::to_string(kSchemaVersion) + " WHERE version=1;COMMIT;");
    if (!s.ok()) {
        (void)db_->exec("ROLLBACK");
        return invalid_argument(with_path(config_.path, s, "cannot migrate it from schema version 1 to " +
                                                               std::to_string(kSchemaVersion)).message());
    }
    return ok_status();
}

int64_t SessionStore::now() const {
    if (config_.now_s) return config_.now_s();
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t SessionStore::expiry_cutoff() const { return config_.ttl_s == 0 ? INT64_MIN : now() - config_.ttl_s; }

Status SessionStore::put_response(StoredResponse r, const std::optional<OwedWebhook>& owed) {
    std::lock_guard lock(mu_);
    HICHAT_RETURN_IF_ERROR(sweep_if_due_locked());
    if (r.created_at == 0) r.created_at = now();
    auto write = [&]() -> Status {
        auto st = db_->prepare(std::string("INSERT OR REPLACE INTO responses(") + kResponseColumns +
                               ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)");
        HICHAT_RETURN_IF_ERROR(st.status());
        st->bind(1, r.id).bind(2, r.owner).bind(3, r.created_at).bind(4, r.model).bind(5, r.response_json);
        st->bind(6, r.input_items_json).bind(7, r.context_json).bind_blob(8, token_blob(r.prompt_ids));
        st->bind_blob(9, token_blob(r.output_ids)).bind(10, r.previous_response_id).bind(11, r.conversation_id);
        st->bind(12, r.model_fingerprint);
        HICHAT_RETURN_IF_ERROR(st->run());
        return owed ? insert_owed_webhook(*db_, kOutboxTable, *owed) : ok_status();
    };
    HICHAT_RETURN_IF_ERROR(db_->exec("BEGIN IMMEDIATE"));
    Status s = write();
    if (s.ok()) s = db_->exec("COMMIT");
    if (!s.ok()) (void)db_->exec("ROLLBACK");
    HICHAT_RETURN_IF_ERROR(s);
    return enforce_cap_locked("responses");
}

Result<std::vector<OwedWebhook>> SessionStore::owed_webhooks(const std::string& response_id) {
    std::lock_guard lock(mu_);
    return select_owed_webhooks(*db_, kOutboxTable, response_id);
}

Status SessionStore::clear_owed_webhook(const OwedWebhook& owed) {
    std::lock_guard lock(mu_);
    return delete_owed_webhook(*db_, kOutboxTable, owed);
}

Result<std::optional<StoredResponse>> SessionStore::get_response(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare(std::string("SELECT ") + kResponseColumns +
                           " FROM responses WHERE id=?1 AND owner=?2 AND created_at>?3");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id).bind(2, owner).bind(3, expiry_cutoff());
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    if (!*row) return std::optional<StoredResponse>();
    auto r = read_response(*st, config_.path);
    HICHAT_RETURN_IF_ERROR(r.status());
    return std::optional<StoredResponse>(std::move(r).value());
}

Result<std::vector<StoredResponse>> SessionStore::unfinished_background_responses() {
    std::lock_guard lock(mu_);
    auto st = db_->prepare(std::string("SELECT ") + kResponseColumns +
                           " FROM responses WHERE created_at>?1 AND json_valid(response_json)"
                           " AND json_extract(response_json, '$.background') = 1"
                           " AND json_extract(response_json, '$.status') IN ('queued', 'in_progress') ORDER BY created_at");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, expiry_cutoff());
    std::vector<StoredResponse> out;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return out;
        auto r = read_response(*st, config_.path);
        HICHAT_RETURN_IF_ERROR(r.status());
        out.push_back(std::move(r).value());
    }
}

Result<bool> SessionStore::delete_response(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare("DELETE FROM responses WHERE id=?1 AND owner=?2 AND created_at>?3");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id).bind(2, owner).bind(3, expiry_cutoff());
    HICHAT_RETURN_IF_ERROR(st->run());
    return db_->changes() > 0;
}

Status SessionStore::put_conversation(StoredConversation c) {
    std::lock_guard lock(mu_);
    HICHAT_RETURN_IF_ERROR(sweep_if_due_locked());
    if (c.created_at == 0) c.created_at = now();
    auto st = db_->prepare(
        "INSERT OR REPLACE INTO conversations(id, owner, created_at, updated_at, metadata_json, context_json) "
        "VALUES(?1,?2,?3,?4,?5,?6)");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, c.id).bind(2, c.owner).bind(3, c.created_at).bind(4, now()).bind(5, c.metadata_json);
    st->bind(6, c.context_json);
    HICHAT_RETURN_IF_ERROR(st->run());
    return enforce_cap_locked("conversations");
}

bool SessionStore::conversation_live_locked(const std::string& owner, const std::string& id, Status& status) {
    auto st = db_->prepare("SELECT 1 FROM conversations WHERE id=?1 AND owner=?2 AND updated_at>?3");
    if (!st.ok()) {
        status = st.status();
        return false;
    }
    st->bind(1, id).bind(2, owner).bind(3, expiry_cutoff());
    auto row = st->step();
    if (!row.ok()) status = row.status();
    return row.ok() && *row;
}

Result<std::optional<StoredConversation>> SessionStore::get_conversation(const std::string& owner,
                                                                         const std::string& id) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare(
        "SELECT id, owner, created_at, metadata_json, context_json FROM conversations "
        "WHERE id=?1 AND owner=?2 AND updated_at>?3");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id).bind(2, owner).bind(3, expiry_cutoff());
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    if (!*row) return std::optional<StoredConversation>();
    return std::optional<StoredConversation>(StoredConversation{.id = st->text(0), .owner = st->text(1),
                                                                .created_at = st->integer(2),
                                                                .metadata_json = st->text(3),
                                                                .context_json = st->text(4)});
}

Result<bool> SessionStore::update_conversation(const std::string& owner, const std::string& id,
                                               const std::optional<std::string>& metadata_json,
                                               const std::optional<std::string>& context_json) {
    std::lock_guard lock(mu_);
    auto st = db_->prepare(
        "UPDATE conversations SET metadata_json=COALESCE(?4, metadata_json), context_json=COALESCE(?5, context_json), "
        "updated_at=?6 WHERE id=?1 AND owner=?2 AND updated_at>?3");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, id).bind(2, owner).bind(3, expiry_cutoff()).bind(6, now());
    if (metadata_json) st->bind(4, *metadata_json);
    if (context_json) st->bind(5, *context_json);
    HICHAT_RETURN_IF_ERROR(st->run());
    return db_->changes() > 0;
}

Status SessionStore::delete_conversation_rows_locked(const std::string& id) {
    auto items = db_->prepare("DELETE FROM conversation_items WHERE conversation_id=?1");
    HICHAT_RETURN_IF_ERROR(items.status());
    items->bind(1, id);
    HICHAT_RETURN_IF_ERROR(items->run());
    auto conv = db_->prepare("DELETE FROM conversations WHERE id=?1");
    HICHAT_RETURN_IF_ERROR(conv.status());
    conv->bind(1, id);
    return conv->run();
}

Result<bool> SessionStore::delete_conversation(const std::string& owner, const std::string& id) {
    std::lock_guard lock(mu_);
    Status status;
    if (!conversation_live_locked(owner, id, status)) {
        HICHAT_RETURN_IF_ERROR(status);
        return false;
    }
    HICHAT_RETURN_IF_ERROR(db_->exec("BEGIN IMMEDIATE"));
    Status s = delete_conversation_rows_locked(id);
    HICHAT_RETURN_IF_ERROR(db_->exec(s.ok() ? "COMMIT" : "ROLLBACK"));
    HICHAT_RETURN_IF_ERROR(s);
    return true;
}

Result<bool> SessionStore::append_items(const std::string& owner, const std::string& conversation_id,
                                        std::vector<ConversationItem> items) {
    std::lock_guard lock(mu_);
    Status status;
    if (!conversation_live_locked(owner, conversation_id, status)) {
        HICHAT_RETURN_IF_ERROR(status);
        return false;
    }
    HICHAT_RETURN_IF_ERROR(db_->exec("BEGIN IMMEDIATE"));
    auto insert = [&]() -> Status {
        auto last = db_->prepare("SELECT COALESCE(MAX(seq), 0) FROM conversation_items WHERE conversation_id=?1");
        HICHAT_RETURN_IF_ERROR(last.status());
        last->bind(1, conversation_id);
        HICHAT_RETURN_IF_ERROR(last->step().status());
        int64_t seq = last->integer(0);
        auto st = db_->prepare(
            "INSERT INTO conversation_items(conversation_id, seq, item_id, item_json, token_ids) VALUES(?1,?2,?3,?4,?5)");
        HICHAT_RETURN_IF_ERROR(st.status());
        for (ConversationItem& item : items) {
            st->reset();
            st->bind(1, conversation_id).bind(2, ++seq).bind(3, item.item_id).bind(4, item.item_json);
            if (item.token_ids) st->bind_blob(5, token_blob(*item.token_ids));
            HICHAT_RETURN_IF_ERROR(st->run());
        }
        auto touch = db_->prepare("UPDATE conversations SET updated_at=?2 WHERE id=?1");
        HICHAT_RETURN_IF_ERROR(touch.status());
        touch->bind(1, conversation_id).bind(2, now());
        return touch->run();
    };
    Status s = insert();
    HICHAT_RETURN_IF_ERROR(db_->exec(s.ok() ? "COMMIT" : "ROLLBACK"));
    HICHAT_RETURN_IF_ERROR(s);
    return true;
}

Result<std::optional<ItemList>> SessionStore::list_items(const std::string& owner, const std::string& conversation_id,
                                                         const ItemPage& page) {
    std::lock_guard lock(mu_);
    Status status;
    if (!conversation_live_locked(owner, conversation_id, status)) {
        HICHAT_RETURN_IF_ERROR(status);
        return std::optional<ItemList>();
    }
    const bool asc = page.order == ItemOrder::kAscending;
    int64_t after_seq = asc ? 0 : INT64_MAX;
    if (!page.after.empty()) {
        auto at = db_->prepare("SELECT seq FROM conversation_items WHERE conversation_id=?1 AND item_id=?2");
        HICHAT_RETURN_IF_ERROR(at.status());
        at->bind(1, conversation_id).bind(2, page.after);
        auto row = at->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return not_found("after: no item " + page.after + " in conversation " + conversation_id);
        after_seq = at->integer(0);
    }
    auto st = db_->prepare(std::string("SELECT item_id, seq, item_json, token_ids FROM conversation_items "
                                       "WHERE conversation_id=?1 AND seq") +
                           (asc ? ">?2 ORDER BY seq ASC" : "<?2 ORDER BY seq DESC") + " LIMIT ?3");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, conversation_id).bind(2, after_seq).bind(3, int64_t{page.limit} + 1);
    ItemList list;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) break;
        if (static_cast<int>(list.items.size()) == page.limit) {
            list.has_more = true;
            break;
        }
        list.items.push_back(read_item(*st));
    }
    return std::optional<ItemList>(std::move(list));
}

Result<std::optional<std::vector<ConversationItem>>> SessionStore::all_items(const std::string& owner,
                                                                             const std::string& conversation_id) {
    using Items = std::optional<std::vector<ConversationItem>>;
    std::lock_guard lock(mu_);
    Status status;
    if (!conversation_live_locked(owner, conversation_id, status)) {
        HICHAT_RETURN_IF_ERROR(status);
        return Items();
    }
    auto st = db_->prepare(
        "SELECT item_id, seq, item_json, token_ids FROM conversation_items WHERE conversation_id=?1 ORDER BY seq");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, conversation_id);
    std::vector<ConversationItem> items;
    for (;;) {
        auto row = st->step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) break;
        items.push_back(read_item(*st));
    }
    return Items(std::move(items));
}

Result<std::optional<ConversationItem>> SessionStore::get_item(const std::string& owner,
                                                               const std::string& conversation_id,
                                                               const std::string& item_id) {
    std::lock_guard lock(mu_);
    Status status;
    if (!conversation_live_locked(owner, conversation_id, status)) {
        HICHAT_RETURN_IF_ERROR(status);
        return std::optional<ConversationItem>();
    }
    auto st = db_->prepare(
        "SELECT item_id, seq, item_json, token_ids FROM conversation_items WHERE conversation_id=?1 AND item_id=?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, conversation_id).bind(2, item_id);
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    if (!*row) return std::optional<ConversationItem>();
    return std::optional<ConversationItem>(read_item(*st));
}

Result<bool> SessionStore::delete_item(const std::string& owner, const std::string& conversation_id,
                                       const std::string& item_id) {
    std::lock_guard lock(mu_);
    Status status;
    if (!conversation_live_locked(owner, conversation_id, status)) {
        HICHAT_RETURN_IF_ERROR(status);
        return false;
    }
    auto st = db_->prepare("DELETE FROM conversation_items WHERE conversation_id=?1 AND item_id=?2");
    HICHAT_RETURN_IF_ERROR(st.status());
    st->bind(1, conversation_id).bind(2, item_id);
    HICHAT_RETURN_IF_ERROR(st->run());
    return db_->changes() > 0;
}

Result<int64_t> SessionStore::sweep() {
    std::lock_guard lock(mu_);
    return sweep_locked();
}

Status SessionStore::sweep_if_due_locked() {
    if (now() - last_sweep_s_ < config_.sweep_interval_s) return ok_status();
    return sweep_locked().status();
}

Result<int64_t> SessionStore::sweep_locked() {
    last_sweep_s_ = now();
    if (config_.ttl_s == 0) return int64_t{0};
    const int64_t cutoff = expiry_cutoff();
    auto responses = db_->prepare("DELETE FROM responses WHERE created_at<=?1");
    HICHAT_RETURN_IF_ERROR(responses.status());
    responses->bind(1, cutoff);
    HICHAT_RETURN_IF_ERROR(responses->run());
    int64_t removed = db_->changes();
    HICHAT_RETURN_IF_ERROR(db_->exec("BEGIN IMMEDIATE"));
    auto sweep_conversations = [&]() -> Status {
        auto items = db_->prepare(
            "DELETE FROM conversation_items WHERE conversation_id IN (SELECT id FROM conversations WHERE updated_at<=?1)");
        HICHAT_RETURN_IF_ERROR(items.status());
        items->bind(1, cutoff);
        HICHAT_RETURN_IF_ERROR(items->run());
        auto conv = db_->prepare("DELETE FROM conversations WHERE updated_at<=?1");
        HICHAT_RETURN_IF_ERROR(conv.status());
        conv->bind(1, cutoff);
        HICHAT_RETURN_IF_ERROR(conv->run());
        removed += db_->changes();
        return ok_status();
    };
    Status s = sweep_conversations();
    HICHAT_RETURN_IF_ERROR(db_->exec(s.ok() ? "COMMIT" : "ROLLBACK"));
    HICHAT_RETURN_IF_ERROR(s);
    return removed;
}

// Oldest first: responses by creation, conversations by their last write.
Status SessionStore::enforce_cap_locked(const char* table) {
    const std::string t = table;
    const bool conversations = t == "conversations";
    auto count = db_->single_text("SELECT COUNT(*) FROM " + t);
    HICHAT_RETURN_IF_ERROR(count.status());
    const int64_t excess = std::stoll(*count) - config_.max_rows;
    if (excess <= 0) return ok_status();
    const std::string oldest = "SELECT id FROM " + t + " ORDER BY " + (conversations ? "updated_at" : "created_at") +
                               ", rowid LIMIT " + std::to_string(excess);
    if (!conversations) return db_->exec("DELETE FROM responses WHERE id IN (" + oldest + ")");
    Status s = db_->exec("BEGIN IMMEDIATE; DELETE FROM conversation_items WHERE conversation_id IN (" + oldest +
                         "); DELETE FROM conversations WHERE id IN (" + oldest + "); COMMIT;");
    if (!s.ok()) (void)db_->exec("ROLLBACK");
    return s;
}

int64_t SessionStore::num_responses() {
    std::lock_guard lock(mu_);
    auto n = db_->single_text("SELECT COUNT(*) FROM responses");
    return n.ok() ? std::stoll(*n) : -1;
}

int64_t SessionStore::num_conversations() {
    std::lock_guard lock(mu_);
    auto n = db_->single_text("SELECT COUNT(*) FROM conversations");
    return n.ok() ? std::stoll(*n) : -1;
}

}  // namespace hichat::session
