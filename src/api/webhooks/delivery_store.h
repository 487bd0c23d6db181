// DeliveryStore: the webhook deliveries not yet finished, in a SQLite file of their own
// (WebhookConfig::state_db_path), so that a restarted server resumes them with the same webhook-id
// and body (at-least-once across restarts). A delivery is a row from its enqueueing until it is
// accepted, refused with 410 or given up.
//
// Ownership: owned by WebhookSender. Threads: its worker thread only (not thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace hichat::session {
class SqliteDb;
}

namespace hichat::api::webhooks {

struct PendingDelivery {
    std::string message_id;          // the webhook-id, stable across attempts and restarts
    std::string url;                 // the target as configured or given
    std::string body;                // the payload, byte for byte the same on every attempt
    int num_attempts = 0;            // attempts made so far
    int64_t next_attempt_at_ms = 0;  // Unix time in ms
};

class DeliveryStore {
public:
    // Creates the file and table if missing. Errors name the path: not a SQLite database, tables of
    // another program, another schema version, not writable.
    static Result<std::unique_ptr<DeliveryStore>> open(const std::string& path);
    ~DeliveryStore();
    DeliveryStore(const DeliveryStore&) = delete;
    DeliveryStore& operator=(const DeliveryStore&) = delete;

    // A row with the same (message_id, url) stays as it is: the same event enqueued again (an owed
    // event after a restart) keeps its attempts.
    Status insert(const PendingDelivery& delivery);
    Status record_failure(const std::string& message_id, const std::string& url, int num_attempts,
                          int64_t next_attempt_at_ms);
    Status erase(const std::string& message_id, const std::string& url);
    Result<std::vector<PendingDelivery>> load_all() const;  // oldest next_attempt_at_ms first

private:
    DeliveryStore(std::unique_ptr<session::SqliteDb> db, std::string path);
    Status check_and_create();
    Status with_path(const Status& s) const;

    std::unique_ptr<session::SqliteDb> db_;
    std::string path_;
};

}  // namespace hichat::api::webhooks
