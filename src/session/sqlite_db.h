// SqliteDb and Statement: a thin RAII layer over one SQLite connection and its prepared statements,
// reporting failures as Status with SQLite's message. Not thread-safe: the owner (SessionStore)
// serialises every call with its mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace hichat::session {

class Statement {
public:
    Statement() = default;
    Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
    ~Statement();
    Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
    Statement& operator=(Statement&& o) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Parameters are 1-based, as in SQL's ?1, ?2 ...
    Statement& bind(int index, std::string_view text);
    Statement& bind_blob(int index, std::string_view bytes);
    Statement& bind(int index, int64_t value);
    Statement& bind_null(int index);

    // true: a row is ready; false: done. Errors become a Status.
    Result<bool> step();
    Status run();  // steps to the end (statements without rows)
    void reset();  // for the next use; keeps nothing bound

    std::string text(int column) const;
    std::string blob(int column) const;
    int64_t integer(int column) const;
    bool is_null(int column) const;

private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDb {
public:
    // Opens (creating it if missing) the database at `path` (":memory:" for one in memory) for
    // reading and writing. Fails when it cannot be opened for writing; `path` is in the message.
    static Result<std::unique_ptr<SqliteDb>> open(const std::string& path);
    ~SqliteDb();
    SqliteDb(const SqliteDb&) = delete;
    SqliteDb& operator=(const SqliteDb&) = delete;

    Status exec(const std::string& sql);  // one or more statements without results
    Result<Statement> prepare(std::string_view sql);
    // The first column of the first row of a query, as text; "" when it returns no row.
    Result<std::string> single_text(std::string_view sql);
    int64_t changes() const;  // rows changed by the last statement
    std::string error_message() const;
    const std::string& path() const { return path_; }

private:
    SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
    sqlite3* db_;
    std::string path_;
};

}  // namespace hichat::session
