// SessionStore: the stored responses, conversations and conversation items of the Responses and
// Conversations APIs, in one SQLite database (WAL journal, synchronous=NORMAL: a committed row
// survives a killed process; a power loss may lose the last commits, never corrupt the file).
//
// Every read and delete is scoped to an owner (the API key's id; "" when no keys are configured):
// a row of another owner is "absent", exactly like a missing one. Rows older than the TTL are absent
// on read and deleted by a sweep that runs at most once per `sweep_interval_s`, from the write path.
// At most `max_rows` responses and `max_rows` conversations are kept: a write beyond that deletes
// the oldest first (a conversation goes with its items).
//
// Webhooks (issue 22): a background response's final row may be written together with its event as
// owed (put_response's `owed`, table response_webhook_outbox, see owed_webhook.h); the webhook outbox
// clears it once the event is queued for delivery. Owed rows are neither swept nor capped.
//
// Ownership: `hichat serve` owns it; the API keeps a pointer. Threads: every method from any thread
// (one connection behind a mutex). Callers are the preprocessing workers and the engine thread's
// sinks, never an HTTP I/O thread: a call may wait for the disk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "session/owed_webhook.h"

namespace hichat::session {

class SqliteDb;

struct SessionStoreConfig {
    std::string path = ":memory:";        // a file (created if missing) or ":memory:"
    int64_t ttl_s = 30 * 86400;           // rows older than this are absent and swept; 0: no expiry
    int64_t max_rows = 100000;            // responses kept (and, separately, conversations); >= 1
    int64_t sweep_interval_s = 60;        // a write sweeps expired rows when the last sweep is older
    std::function<int64_t()> now_s;       // unix seconds; null: the system clock (tests inject one)

    Status validate() const;
};

struct StoredResponse {
    std::string id;                       // "resp_..."
    std::string owner;
    int64_t created_at = 0;               // unix seconds; 0 on put: now
    std::string model;
    std::string response_json;            // the response object as served
    std::string input_items_json;         // JSON array: this turn's input items
    std::string context_json;             // opaque to the store: what the API needs to continue it
    std::vector<int32_t> prompt_ids;      // [num_prompt_tokens] exactly as sent to the engine
    std::vector<int32_t> output_ids;      // [num_output_tokens] exactly as generated
    std::string previous_response_id;     // "" if none
    std::string conversation_id;          // "" if none
    std::string model_fingerprint;        // the token ids are only valid for this model and tokenizer
};

struct StoredConversation {
    std::string id;                       // "conv_..."
    std::string owner;
    int64_t created_at = 0;               // unix seconds; 0 on put: now
    std::string metadata_json = "{}";
    std::string context_json;             // opaque to the store (the API's continuation state)
};

struct ConversationItem {
    std::string item_id;                  // "msg_..."; unique within its conversation
    int64_t seq = 0;                      // order within the conversation; assigned by append_items
    std::string item_json;
    std::optional<std::vector<int32_t>> token_ids;  // what the item contributed to a prompt, if known
};

enum class ItemOrder { kAscending, kDescending };

struct ItemPage {
    std::string after;                    // item id to start after ("" : from the first)
    int limit = 20;                       // >= 1
    ItemOrder order = ItemOrder::kDescending;
};

struct ItemList {
    std::vector<ConversationItem> items;
    bool has_more = false;
};

class SessionStore {
public:
    // Opens or creates the database and checks it: a file that is not a SQLite database, fails
    // SQLite's quick_check, holds another schema or a newer schema version, or cannot be written is
    // refused with a Status naming the path and the problem; never an empty store in its place. A
    // version 1 file (before the webhook outbox) is migrated to version 2 in one transaction.
    static Result<std::unique_ptr<SessionStore>> open(SessionStoreConfig config);
    ~SessionStore();
    SessionStore(const SessionStore&) = delete;
    SessionStore& operator=(const SessionStore&) = delete;

    static constexpr int kSchemaVersion = 2;

    // Inserts (or replaces, same id) one response; with `owed`, records that webhook event as owed in
    // the same transaction (a background response's final row, with webhooks on).
    Status put_response(StoredResponse r, const std::optional<OwedWebhook>& owed = std::nullopt);
    // nullopt: absent (missing, expired or another owner's).
    Result<std::optional<StoredResponse>> get_response(const std::string& owner, const std::string& id);
    // false: absent.
    Result<bool> delete_response(const std::string& owner, const std::string& id);
    // Every live response, of every owner, whose response_json has "background": true and "status"
    // "queued" or "in_progress": the background responses a stopped server left unfinished. Reads
    // response_json with SQLite's json_extract over the whole table: for the start, not a hot path.
    Result<std::vector<StoredResponse>> unfinished_background_responses();

    Status put_conversation(StoredConversation c);
    Result<std::optional<StoredConversation>> get_conversation(const std::string& owner, const std::string& id);
    Result<bool> update_conversation(const std::string& owner, const std::string& id,
                                     const std::optional<std::string>& metadata_json,
                                     const std::optional<std::string>& context_json);
    Result<bool> delete_conversation(const std::string& owner, const std::string& id);  // with its items

    // Appends after the conversation's last item, assigning seq; false: the conversation is absent.
    Result<bool> append_items(const std::string& owner, const std::string& conversation_id,
                              std::vector<ConversationItem> items);
    // nullopt: the conversation is absent; a page whose `after` names no item of it: not_found.
    Result<std::optional<ItemList>> list_items(const std::string& owner, const std::string& conversation_id,
                                               const ItemPage& page);
    // Every item in order (for building a prompt); nullopt: the conversation is absent.
    Result<std::optional<std::vector<ConversationItem>>> all_items(const std::string& owner,
                                                                   const std::string& conversation_id);
    Result<std::optional<ConversationItem>> get_item(const std::string& owner, const std::string& conversation_id,
                                                     const std::string& item_id);
    Result<bool> delete_item(const std::string& owner, const std::string& conversation_id, const std::string& item_id);

    // The webhook outbox's calls: the events owed for `response_id` ("": for every response), oldest
    // first; and the clearing of one once it is queued for delivery (an absent one is no error).
    Result<std::vector<OwedWebhook>> owed_webhooks(const std::string& response_id = "");
    Status clear_owed_webhook(const OwedWebhook& owed);

    // Deletes the expired rows now; returns how many responses and conversations went.
    Result<int64_t> sweep();

    int64_t num_responses();      // live or not yet swept
    int64_t num_conversations();

private:
    SessionStore(SessionStoreConfig config, std::unique_ptr<SqliteDb> db);
    Status check_and_migrate();
    Status migrate_from(int version);
    int64_t now() const;
    int64_t expiry_cutoff() const;  // rows created before this are expired
    Status sweep_if_due_locked();
    Result<int64_t> sweep_locked();
    Status enforce_cap_locked(const char* table);
    bool conversation_live_locked(const std::string& owner, const std::string& id, Status& status);
    Status delete_conversation_rows_locked(const std::string& id);

    SessionStoreConfig config_;
    std::mutex mu_;
    std::unique_ptr<SqliteDb> db_;   // guarded by mu_
    int64_t last_sweep_s_ = 0;       // guarded by mu_
};

}  // namespace hichat::session
