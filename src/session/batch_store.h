// BatchStore: the durable state of the Files and Batch APIs in SQLite: file metadata (the bytes live in
// a FileFolder), batches, and one row per finished batch line. Same database file as the SessionStore
// (its own tables and its own schema version table), its own connection: WAL journal,
// synchronous=NORMAL, so a committed row survives a killed process.
//
// A batch line counts as finished once its row is committed (record_result); a line is recorded at most
// once (the first record stays), so after a restart the runner runs only the lines without a row.
//
// Webhooks (issue 22): with webhooks on, finish_batch commits the batch's event as owed together with
// its final state (table batch_webhook_outbox, see owed_webhook.h); the webhook outbox clears it once
// the event is queued for delivery, and enqueues what is still owed at the next start.
//
// Every read of the API is scoped to an owner (the API key's id; "" without keys): another owner's row
// is absent, as a missing one. The runner's calls (unfinished_batches, start_batch, ...) take ids only.
//
// Ownership: `hichat serve` owns it; the API keeps a pointer. Threads: every method from any thread
// (one connection behind a mutex); a call may wait for the disk, so never from an I/O or engine thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "session/owed_webhook.h"

namespace hichat::session {

class SqliteDb;

struct BatchStoreConfig {
    std::string path = ":memory:";        // a file (created if missing) or ":memory:"
    std::function<int64_t()> now_s;       // unix seconds; null: the system clock (tests inject one)

    Status validate() const;
};

struct StoredFile {
    std::string id;                       // "file-..."
    std::string owner;
    int64_t created_at = 0;               // unix seconds; 0 on put: now
    int64_t num_bytes = 0;
    std::string filename;
    std::string purpose;                  // "batch" (uploads) or "batch_output" (a batch's results)
};

// OpenAI's batch states. Final: kFailed, kCompleted, kExpired, kCancelled.
enum class BatchStatus { kValidating, kFailed, kInProgress, kFinalizing, kCompleted, kExpired, kCancelling, kCancelled };
std::string_view batch_status_name(BatchStatus status);  // "in_progress", ...
bool is_final(BatchStatus status);

struct StoredBatch {
    std::string id;                       // "batch_..."
    std::string owner;
    int64_t created_at = 0;               // unix seconds; 0 on create: now
    std::string endpoint;                 // "/v1/chat/completions" or "/v1/completions"
    std::string input_file_id;
    std::string completion_window = "24h";
    std::string metadata_json = "null";   // a JSON object or null
    BatchStatus status = BatchStatus::kValidating;
    std::string errors_json;              // "": none; else OpenAI's {"object":"list","data":[...]}
    std::string output_file_id;           // "": none
    std::string error_file_id;            // "": none
    int64_t expires_at = 0;               // unix seconds: created_at + the completion window
    // Unix seconds at which the batch entered each state; 0: not (yet).
    int64_t in_progress_at = 0, finalizing_at = 0, completed_at = 0, failed_at = 0, expired_at = 0,
            cancelling_at = 0, cancelled_at = 0;
    int64_t num_requests_total = 0;       // the input's lines; set when validation ends
    int64_t num_requests_completed = 0;   // read only: finished lines answered 2xx
    int64_t num_requests_failed = 0;      // read only: the other finished lines
};

struct BatchLineResult {
    int64_t line = 0;                     // 0-based index among the input's non-blank lines
    bool ok = false;                      // answered 2xx: a line of the output file; else of the error file
    std::string result_json;              // that file's line, without the newline
};

// How a batch ends (finish_batch): the final state, the files it produced, its errors.
struct BatchEnd {
    BatchStatus status = BatchStatus::kCompleted;  // one of the final states
    std::vector<StoredFile> files;        // output / error files, their bytes already in the folder
    std::string output_file_id;           // "": none
    std::string error_file_id;            // "": none
    std::string errors_json;              // "": keep the batch's
    std::optional<OwedWebhook> webhook;   // with webhooks on: the event owed, committed with the state
};

struct ListPage {
    std::string after;                    // id to start after ("": from the newest)
    int limit = 20;                       // >= 1
};

template <typename T>
struct ListOf {
    std::vector<T> items;                 // newest first
    bool has_more = false;
};

class BatchStore {
public:
    // Opens or creates the tables. A file that is not a SQLite database or holds a newer batch schema
    // is refused with a Status naming the path; never an empty store in its place. A version 1 file
    // (before the webhook outbox) is migrated to version 2 in one transaction; HiChat builds that read
    // only version 1 refuse it afterwards.
    static Result<std::unique_ptr<BatchStore>> open(BatchStoreConfig config);
    ~BatchStore();
    BatchStore(const BatchStore&) = delete;
    BatchStore& operator=(const BatchStore&) = delete;

    static constexpr int kSchemaVersion = 2;

    Status put_file(StoredFile f);
    Result<std::optional<StoredFile>> get_file(const std::string& owner, const std::string& id);
    Result<bool> delete_file(const std::string& owner, const std::string& id);  // false: absent
    // not_found when `after` names no file of the owner.
    Result<ListOf<StoredFile>> list_files(const std::string& owner, const ListPage& page);

    Status create_batch(StoredBatch b);
    Result<std::optional<StoredBatch>> get_batch(const std::string& owner, const std::string& id);
    // not_found when `after` names no batch of the owner.
    Result<ListOf<StoredBatch>> list_batches(const std::string& owner, const ListPage& page);
    // validating or in_progress -> cancelling (other states stay); the batch after it, nullopt: absent.
    Result<std::optional<StoredBatch>> cancel_batch(const std::string& owner, const std::string& id);

    // The runner's calls, by id.
    // Batches in a state that is not final, every owner's, oldest first.
    Result<std::vector<StoredBatch>> unfinished_batches();
    Result<std::optional<StoredBatch>> batch(const std::string& id);
    // validating -> in_progress with the input's line count and the lines refused by validation
    // (recorded as results), in one transaction. false: the batch was not validating (cancelled).
    Result<bool> start_batch(const std::string& id, int64_t num_requests_total,
                             const std::vector<BatchLineResult>& refused);
    // in_progress -> finalizing or cancelling; false: the batch was in another state.
    Result<bool> advance(const std::string& id, BatchStatus from, BatchStatus to);
    // The final state with its files, errors and owed webhook event, in one transaction.
    Status finish_batch(const std::string& id, const BatchEnd& end);
    // Records one finished line; false: it was recorded before (the first record stays).
    Result<bool> record_result(const std::string& batch_id, const BatchLineResult& r);
    Result<std::vector<int64_t>> finished_lines(const std::string& batch_id);  // ascending
    Result<std::vector<BatchLineResult>> results(const std::string& batch_id);  // in line order

    // The webhook outbox's calls: the events owed for `batch_id` ("": for every batch), oldest first;
    // and the clearing of one once it is queued for delivery (an absent one is no error).
    Result<std::vector<OwedWebhook>> owed_webhooks(const std::string& batch_id = "");
    Status clear_owed_webhook(const OwedWebhook& owed);

private:
    BatchStore(BatchStoreConfig config, std::unique_ptr<SqliteDb> db);
    Status check_and_migrate();
    Status migrate_from(int version);
    int64_t now() const;
    Result<std::optional<StoredBatch>> batch_locked(const std::string& id, const std::string* owner);
    Result<bool> set_status_locked(const std::string& id, BatchStatus from, BatchStatus to);
    Status in_transaction_locked(const std::function<Status()>& body);

    BatchStoreConfig config_;
    std::mutex mu_;
    std::unique_ptr<SqliteDb> db_;   // guarded by mu_
};

}  // namespace hichat::session
