#include "session/sqlite_db.h"

#include <sqlite3.h>

namespace hichat::session {

Statement::~Statement() {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::operator=(Statement&& o) noexcept {
    if (this != &o) {
        if (stmt_ != nullptr) sqlite3_finalize(stmt_);
        db_ = o.db_;
        stmt_ = o.stmt_;
        o.stmt_ = nullptr;
    }
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
    // A zero-length blob is still a blob, not NULL: SQLite needs a non-null pointer for that.
    static const char kEmpty = 0;
    sqlite3_bind_blob(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(), static_cast<int>(bytes.size()),
                      SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind(int index, int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
}

Statement& Statement::bind_null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
}

Result<bool> Statement::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return internal_error(std::string("session database: ") + sqlite3_errmsg(db_));
}

Status Statement::run() {
    for (;;) {
        auto row = step();
        HICHAT_RETURN_IF_ERROR(row.status());
        if (!*row) return ok_status();
    }
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

std::string Statement::text(int column) const {
    const auto* p = sqlite3_column_text(stmt_, column);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, column));
}

std::string Statement::blob(int column) const {
    const void* p = sqlite3_column_blob(stmt_, column);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, column));
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::string& path) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                   nullptr);
    if (rc != SQLITE_OK) {
        std::string why = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
        sqlite3_close(db);
        return invalid_argument("session database " + path + ": cannot open it for writing (" + why + ")");
    }
    // SQLite falls back to read-only for a write-protected file; the store must be able to write.
    if (sqlite3_db_readonly(db, "main") == 1) {
        sqlite3_close(db);
        return invalid_argument("session database " + path + ": the file is read-only");
    }
    return std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
}

SqliteDb::~SqliteDb() { sqlite3_close_v2(db_); }

Status SqliteDb::exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return ok_status();
    std::string message = err != nullptr ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return internal_error("session database " + path_ + ": " + message);
}

Result<std::string> SqliteDb::single_text(std::string_view sql) {
    auto st = prepare(sql);
    HICHAT_RETURN_IF_ERROR(st.status());
    auto row = st->step();
    HICHAT_RETURN_IF_ERROR(row.status());
    return *row ? st->text(0) : std::string();
}

Result<Statement> SqliteDb::prepare(std::string_view sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK) {
        return internal_error("session database " + path_ + ": " + sqlite3_errmsg(db_));
    }
    return Statement(db_, stmt);
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

std::string SqliteDb::error_message() const { return sqlite3_errmsg(db_); }

}  // namespace hichat::session
