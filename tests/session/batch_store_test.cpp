// BatchStore and FileFolder: files and batches scoped to their owner, the batch state machine, and the
// resume bookkeeping: a line is recorded once (a second record of it changes nothing), the finished
// lines and counts survive a process killed without closing, and a SessionStore shares the file.
#include "session/batch_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "../common/temp_dir.h"
#include "session/file_folder.h"
#include "session/sqlite_db.h"
#include "session/session_store.h"

namespace hichat::session {
namespace {

using api::test_support::TempDir;

std::unique_ptr<BatchStore> open_or_die(BatchStoreConfig config) {
    auto store = BatchStore::open(std::move(config));
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
}

StoredBatch batch(const std::string& id, const std::string& owner) {
    return {.id = id, .owner = owner, .endpoint = "/v1/chat/completions", .input_file_id = "file-in",
            .metadata_json = R"({"k":"v"})", .expires_at = 99};
}

BatchLineResult result(int64_t line, bool ok) {
    return {.line = line, .ok = ok, .result_json = R"({"line":)" + std::to_string(line) + "}"};
}

TEST(BatchStore, FilesAreScopedToTheirOwnerAndListNewestFirst) {
    auto store = open_or_die({.path = ":memory:", .now_s = [] { return int64_t{1000}; }});
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(store->put_file({.id = "file-" + std::to_string(i), .owner = "key-a", .num_bytes = 10 + i,
                                     .filename = "in.jsonl", .purpose = "batch"}).ok());
    }
    ASSERT_TRUE(store->put_file({.id = "file-b", .owner = "key-b", .purpose = "batch"}).ok());
    auto got = store->get_file("key-a", "file-1");
    ASSERT_TRUE(got.ok() && got->has_value());
    EXPECT_EQ((*got)->num_bytes, 11);
    EXPECT_EQ((*got)->created_at, 1000);
    EXPECT_EQ((*got)->filename, "in.jsonl");
    auto other = store->get_file("key-b", "file-1");
    ASSERT_TRUE(other.ok());
    EXPECT_FALSE(other->has_value());

    auto page = store->list_files("key-a", {.limit = 2});
    ASSERT_TRUE(page.ok());
    ASSERT_EQ(page->items.size(), 2u);
    EXPECT_EQ(page->items[0].id, "file-2");
    EXPECT_EQ(page->items[1].id, "file-1");
    EXPECT_TRUE(page->has_more);
    auto rest = store->list_files("key-a", {.after = "file-1", .limit = 2});
    ASSERT_TRUE(rest.ok());
    ASSERT_EQ(rest->items.size(), 1u);
    EXPECT_EQ(rest->items[0].id, "file-0");
    EXPECT_FALSE(rest->has_more);
    auto bad_after = store->list_files("key-a", {.after = "file-b"});
    ASSERT_FALSE(bad_after.ok());
    EXPECT_EQ(bad_after.status().code(), StatusCode::kNotFound);

    auto wrong_owner = store->delete_file("key-b", "file-0");
    ASSERT_TRUE(wrong_owner.ok());
    EXPECT_FALSE(*wrong_owner);
    auto deleted = store->delete_file("key-a", "file-0");
    ASSERT_TRUE(deleted.ok());
    EXPECT_TRUE(*deleted);
    EXPECT_FALSE(store->get_file("key-a", "file-0")->has_value());
}

TEST(BatchStore, StateMachineAndCountsFromRecordedLines) {
    int64_t now = 500;
    auto store = open_or_die({.path = ":memory:", .now_s = [&] { return now; }});
    ASSERT_TRUE(store->create_batch(batch("batch_1", "key-a")).ok());
    auto b = store->get_batch("key-a", "batch_1");
    ASSERT_TRUE(b.ok() && b->has_value());
    EXPECT_EQ((*b)->status, BatchStatus::kValidating);
    EXPECT_EQ((*b)->created_at, 500);
    EXPECT_EQ((*b)->metadata_json, R"({"k":"v"})");
    EXPECT_FALSE(store->get_batch("key-b", "batch_1")->has_value());

    now = 501;
    auto started = store->start_batch("batch_1", 5, {result(3, false)});  // line 3 refused by validation
    ASSERT_TRUE(started.ok());
    EXPECT_TRUE(*started);
    EXPECT_FALSE(*store->start_batch("batch_1", 5, {}));  // only once
    b = store->batch("batch_1");
    EXPECT_EQ((*b)->status, BatchStatus::kInProgress);
    EXPECT_EQ((*b)->in_progress_at, 501);
    EXPECT_EQ((*b)->num_requests_total, 5);
    EXPECT_EQ((*b)->num_requests_failed, 1);

    EXPECT_TRUE(*store->record_result("batch_1", result(0, true)));
    EXPECT_TRUE(*store->record_result("batch_1", result(4, true)));
    b = store->batch("batch_1");
    EXPECT_EQ((*b)->num_requests_completed, 2);
    EXPECT_EQ((*b)->num_requests_failed, 1);

    EXPECT_FALSE(*store->advance("batch_1", BatchStatus::kValidating, BatchStatus::kFinalizing));
    EXPECT_TRUE(*store->advance("batch_1", BatchStatus::kInProgress, BatchStatus::kFinalizing));
    now = 502;
    ASSERT_TRUE(store->finish_batch("batch_1", {.status = BatchStatus::kCompleted,
                                                .files = {{.id = "file-out", .owner = "key-a", .num_bytes = 3,
                                                           .filename = "batch_1_output.jsonl", .purpose = "batch_output"}},
                                                .output_file_id = "file-out"}).ok());
    b = store->get_batch("key-a", "batch_1");
    EXPECT_EQ((*b)->status, BatchStatus::kCompleted);
    EXPECT_EQ((*b)->completed_at, 502);
    EXPECT_EQ((*b)->output_file_id, "file-out");
    EXPECT_EQ((*b)->error_file_id, "");
    EXPECT_TRUE(store->get_file("key-a", "file-out")->has_value());
    EXPECT_FALSE(store->finish_batch("batch_1", {.status = BatchStatus::kInProgress}).ok());
    EXPECT_TRUE(store->unfinished_batches()->empty());
}

TEST(BatchStore, CancelMovesOnlyRunningBatches) {
    auto store = open_or_die({.path = ":memory:"});
    ASSERT_TRUE(store->create_batch(batch("batch_1", "key-a")).ok());
    ASSERT_TRUE(store->create_batch(batch("batch_2", "key-a")).ok());
    auto absent = store->cancel_batch("key-b", "batch_1");
    ASSERT_TRUE(absent.ok());
    EXPECT_FALSE(absent->has_value());
    auto c = store->cancel_batch("key-a", "batch_1");
    ASSERT_TRUE(c.ok() && c->has_value());
    EXPECT_EQ((*c)->status, BatchStatus::kCancelling);
    EXPECT_GT((*c)->cancelling_at, 0);
    EXPECT_FALSE(*store->start_batch("batch_1", 3, {}));  // cancelled while validating: never starts
    ASSERT_TRUE(store->finish_batch("batch_1", {.status = BatchStatus::kCancelled}).ok());
    auto again = store->cancel_batch("key-a", "batch_1");
    EXPECT_EQ((*again)->status, BatchStatus::kCancelled);  // a final batch stays as it is

    auto unfinished = store->unfinished_batches();
    ASSERT_TRUE(unfinished.ok());
    ASSERT_EQ(unfinished->size(), 1u);
    EXPECT_EQ((*unfinished)[0].id, "batch_2");
    auto list = store->list_batches("key-a", {.limit = 10});
    ASSERT_EQ(list->items.size(), 2u);
    EXPECT_EQ(list->items[0].id, "batch_2");
}

TEST(BatchStore, ALineIsRecordedOnceAndTheFirstRecordStays) {
    auto store = open_or_die({.path = ":memory:"});
    ASSERT_TRUE(store->create_batch(batch("batch_1", "")).ok());
    ASSERT_TRUE(*store->start_batch("batch_1", 3, {}));
    EXPECT_TRUE(*store->record_result("batch_1", {.line = 1, .ok = true, .result_json = "first"}));
    EXPECT_FALSE(*store->record_result("batch_1", {.line = 1, .ok = false, .result_json = "second"}));
    EXPECT_TRUE(*store->record_result("batch_1", {.line = 0, .ok = false, .result_json = "zero"}));
    auto lines = store->finished_lines("batch_1");
    ASSERT_TRUE(lines.ok());
    EXPECT_EQ(*lines, (std::vector<int64_t>{0, 1}));
    auto results = store->results("batch_1");
    ASSERT_EQ(results->size(), 2u);
    EXPECT_EQ((*results)[0].result_json, "zero");
    EXPECT_EQ((*results)[1].result_json, "first");
    EXPECT_TRUE((*results)[1].ok);
    auto b = store->batch("batch_1");
    EXPECT_EQ((*b)->num_requests_completed, 1);
    EXPECT_EQ((*b)->num_requests_failed, 1);
}

// A killed server leaves its batch in progress with the lines it finished; the restarted store says
// which lines are done, so the runner never runs them again.
TEST(BatchStore, FinishedLinesSurviveAKilledProcessBesideTheSessionStore) {
    TempDir dir;
    const std::string path = dir.path() + "/sessions.db";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto sessions = SessionStore::open({.path = path});
        if (!sessions.ok()) _exit(3);
        auto store = BatchStore::open({.path = path});
        if (!store.ok()) _exit(4);
        if (!(*store)->create_batch(batch("batch_1", "")).ok()) _exit(5);
        if (!(*store)->start_batch("batch_1", 10, {result(9, false)}).ok()) _exit(6);
        for (int64_t line : {0, 2, 5}) {
            if (!(*store)->record_result("batch_1", result(line, true)).ok()) _exit(7);
        }
        _exit(0);  // no destructor, no sqlite3_close: as after SIGKILL
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    auto sessions = SessionStore::open({.path = path});
    ASSERT_TRUE(sessions.ok()) << sessions.status().message();  // the batch tables do not bother it
    auto store = open_or_die({.path = path});
    auto unfinished = store->unfinished_batches();
    ASSERT_TRUE(unfinished.ok());
    ASSERT_EQ(unfinished->size(), 1u);
    EXPECT_EQ((*unfinished)[0].status, BatchStatus::kInProgress);
    EXPECT_EQ((*unfinished)[0].num_requests_completed, 3);
    EXPECT_EQ((*unfinished)[0].num_requests_failed, 1);
    EXPECT_EQ(*store->finished_lines("batch_1"), (std::vector<int64_t>{0, 2, 5, 9}));
}

TEST(BatchStore, NewerSchemaAndTextFilesAreRefusedNamingThePath) {
    TempDir dir;
    const std::string text = dir.write("notes.db", "not a database\n" + std::string(5000, 'x'));
    auto refused = BatchStore::open({.path = text});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(text), std::string::npos);
    const std::string path = dir.path() + "/b.db";
    { ASSERT_NE(open_or_die({.path = path}), nullptr); }
    {
        auto db = SqliteDb::open(path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("UPDATE batch_schema_version SET version=7").ok());
    }
    auto newer = BatchStore::open({.path = path});
    ASSERT_FALSE(newer.ok());
    EXPECT_NE(newer.status().message().find("batch schema version 7"), std::string::npos) << newer.status().message();
}

// Webhooks on: the final state and its owed event commit together, or neither does.
TEST(BatchStore, TheOwedWebhookCommitsWithTheFinalStateOrNotAtAll) {
    TempDir dir;
    const std::string path = dir.path() + "/b.db";
    auto store = open_or_die({.path = path});
    const OwedWebhook owed{.object_id = "batch_1", .event_type = "batch.completed", .created_at_ms = 1234};
    ASSERT_TRUE(store->create_batch(batch("batch_1", "")).ok());
    ASSERT_TRUE(store->finish_batch("batch_1", {.status = BatchStatus::kCompleted, .webhook = owed}).ok());
    auto all = store->owed_webhooks();
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].object_id, "batch_1");
    EXPECT_EQ((*all)[0].event_type, "batch.completed");
    EXPECT_EQ((*all)[0].created_at_ms, 1234);
    EXPECT_EQ(store->owed_webhooks("batch_1")->size(), 1u);
    EXPECT_TRUE(store->owed_webhooks("batch_2")->empty());

    ASSERT_TRUE(store->create_batch(batch("batch_2", "")).ok());  // without webhooks: nothing owed
    ASSERT_TRUE(store->finish_batch("batch_2", {.status = BatchStatus::kFailed}).ok());
    EXPECT_EQ(store->owed_webhooks()->size(), 1u);

    ASSERT_TRUE(store->clear_owed_webhook(owed).ok());
    EXPECT_TRUE(store->owed_webhooks()->empty());
    EXPECT_TRUE(store->clear_owed_webhook(owed).ok());  // cleared twice: no error

    // The outbox insert fails (its table is gone): the final state is rolled back with it.
    ASSERT_TRUE(store->create_batch(batch("batch_3", "")).ok());
    {
        auto db = SqliteDb::open(path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("DROP TABLE batch_webhook_outbox").ok());
    }
    EXPECT_FALSE(store->finish_batch("batch_3", {.status = BatchStatus::kCompleted,
                                                 .webhook = OwedWebhook{.object_id = "batch_3",
                                                                        .event_type = "batch.completed"}}).ok());
    EXPECT_EQ((*store->batch("batch_3"))->status, BatchStatus::kValidating);
}

// A file of the first batch schema (no outbox table) is migrated in place, its batches kept.
TEST(BatchStore, AVersion1FileIsMigratedToVersion2) {
    TempDir dir;
    const std::string path = dir.path() + "/b.db";
    {
        auto store = open_or_die({.path = path});
        ASSERT_TRUE(store->create_batch(batch("batch_old", "key-a")).ok());
    }
    {
        auto db = SqliteDb::open(path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("DROP TABLE batch_webhook_outbox; UPDATE batch_schema_version SET version=1").ok());
    }
    auto store = open_or_die({.path = path});
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->get_batch("key-a", "batch_old")->has_value());
    ASSERT_TRUE(store->finish_batch("batch_old", {.status = BatchStatus::kCancelled,
                                                  .webhook = OwedWebhook{.object_id = "batch_old",
                                                                         .event_type = "batch.cancelled"}}).ok());
    EXPECT_EQ(store->owed_webhooks()->size(), 1u);
    auto db = SqliteDb::open(path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(*(*db)->single_text("SELECT version FROM batch_schema_version"), std::to_string(BatchStore::kSchemaVersion));
    EXPECT_EQ(BatchStore::kSchemaVersion, 2);
}

// Killed right after the final state was committed: its event is still owed at the next start.
TEST(BatchStore, TheOwedWebhookSurvivesAKilledProcess) {
    TempDir dir;
    const std::string path = dir.path() + "/sessions.db";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto store = BatchStore::open({.path = path});
        if (!store.ok()) _exit(3);
        if (!(*store)->create_batch(batch("batch_k", "")).ok()) _exit(4);
        const OwedWebhook owed{.object_id = "batch_k", .event_type = "batch.expired", .created_at_ms = 77};
        if (!(*store)->finish_batch("batch_k", {.status = BatchStatus::kExpired, .webhook = owed}).ok()) _exit(5);
        _exit(0);  // as after SIGKILL
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    auto store = open_or_die({.path = path});
    EXPECT_EQ((*store->batch("batch_k"))->status, BatchStatus::kExpired);
    auto owed = store->owed_webhooks();
    ASSERT_TRUE(owed.ok());
    ASSERT_EQ(owed->size(), 1u);
    EXPECT_EQ((*owed)[0].event_type, "batch.expired");
    EXPECT_EQ((*owed)[0].created_at_ms, 77);
}

TEST(FileFolder, WritesReadsAndRemovesByIdOnly) {
    TempDir dir;
    auto folder = FileFolder::open(dir.path() + "/files/nested");
    ASSERT_TRUE(folder.ok()) << folder.status().message();
    const std::string bytes = std::string("line one\n") + std::string(1, '\0') + "binary\n";
    ASSERT_TRUE(folder->write("file-abc", bytes).ok());
    auto read = folder->read("file-abc");
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(*read, bytes);
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/files/nested/file-abc.partial"));
    EXPECT_FALSE(folder->write("../escape", "x").ok());
    EXPECT_FALSE(folder->read("a/b").ok());
    ASSERT_TRUE(folder->remove("file-abc").ok());
    EXPECT_EQ(folder->read("file-abc").status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(folder->remove("file-abc").ok());
}

}  // namespace
}  // namespace hichat::session
