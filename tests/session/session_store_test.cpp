#include "session/session_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../common/temp_dir.h"
#include "session/sqlite_db.h"

namespace hichat::session {
namespace {

using api::test_support::TempDir;

struct FakeClock {
    int64_t now = 1'700'000'000;
    std::function<int64_t()> fn() {
        return [this] { return now; };
    }
};

std::unique_ptr<SessionStore> open_or_die(SessionStoreConfig config) {
    auto store = SessionStore::open(std::move(config));
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
}

StoredResponse response(const std::string& id, const std::string& owner, int64_t created_at = 0) {
    return {.id = id, .owner = owner, .created_at = created_at, .model = "tiny",
            .response_json = R"({"id":")" + id + R"("})", .input_items_json = "[]", .context_json = "{}",
            .prompt_ids = {1, 2, 3}, .output_ids = {7, 8}, .previous_response_id = "",
            .conversation_id = "", .model_fingerprint = "fp"};
}

ConversationItem item(const std::string& id, std::optional<std::vector<int32_t>> tokens = std::nullopt) {
    return {.item_id = id, .item_json = R"({"id":")" + id + R"("})", .token_ids = std::move(tokens)};
}

TEST(SessionStore, ResponseRoundTripKeepsEveryField) {
    auto store = open_or_die({.path = ":memory:", .ttl_s = 0});  // created_at 1234 would have expired
    StoredResponse r = response("resp_1", "key-a", 1234);
    r.previous_response_id = "resp_0";
    r.conversation_id = "conv_9";
    r.prompt_ids = {5, -1, 2147483647};
    r.output_ids = {};
    ASSERT_TRUE(store->put_response(r).ok());
    auto got = store->get_response("key-a", "resp_1");
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_TRUE(got->has_value());
    const StoredResponse& g = **got;
    EXPECT_EQ(g.id, "resp_1");
    EXPECT_EQ(g.created_at, 1234);
    EXPECT_EQ(g.model, "tiny");
    EXPECT_EQ(g.response_json, r.response_json);
    EXPECT_EQ(g.prompt_ids, r.prompt_ids);
    EXPECT_TRUE(g.output_ids.empty());
    EXPECT_EQ(g.previous_response_id, "resp_0");
    EXPECT_EQ(g.conversation_id, "conv_9");
    EXPECT_EQ(g.model_fingerprint, "fp");
}

TEST(SessionStore, AnotherOwnerSeesNothingAndCannotDelete) {
    auto store = open_or_die({.path = ":memory:"});
    ASSERT_TRUE(store->put_response(response("resp_1", "key-a")).ok());
    EXPECT_FALSE(store->get_response("key-b", "resp_1")->has_value());
    EXPECT_FALSE(store->get_response("", "resp_1")->has_value());
    EXPECT_FALSE(*store->delete_response("key-b", "resp_1"));
    EXPECT_TRUE(store->get_response("key-a", "resp_1")->has_value());
    EXPECT_TRUE(*store->delete_response("key-a", "resp_1"));
    EXPECT_FALSE(store->get_response("key-a", "resp_1")->has_value());
    EXPECT_FALSE(*store->delete_response("key-a", "resp_1"));

    ASSERT_TRUE(store->put_conversation({.id = "conv_1", .owner = "key-a"}).ok());
    EXPECT_FALSE(store->get_conversation("key-b", "conv_1")->has_value());
    EXPECT_FALSE(*store->append_items("key-b", "conv_1", {item("msg_1")}));
    EXPECT_FALSE(store->list_items("key-b", "conv_1", {})->has_value());
    EXPECT_FALSE(*store->update_conversation("key-b", "conv_1", R"({"a":"b"})", std::nullopt));
    EXPECT_FALSE(*store->delete_conversation("key-b", "conv_1"));
    EXPECT_TRUE(store->get_conversation("key-a", "conv_1")->has_value());
}

TEST(SessionStore, ConversationItemsKeepOrderTokensAndPaginate) {
    auto store = open_or_die({.path = ":memory:"});
    ASSERT_TRUE(store->put_conversation({.id = "conv_1", .owner = "", .metadata_json = R"({"k":"v"})"}).ok());
    ASSERT_TRUE(*store->append_items("", "conv_1", {item("msg_a", std::vector<int32_t>{1, 2}), item("msg_b")}));
    ASSERT_TRUE(*store->append_items("", "conv_1", {item("msg_c", std::vector<int32_t>{})}));
    auto all = store->all_items("", "conv_1");
    ASSERT_TRUE(all.ok() && all->has_value());
    ASSERT_EQ((*all)->size(), 3u);
    EXPECT_EQ((**all)[0].item_id, "msg_a");
    EXPECT_EQ((**all)[0].token_ids, (std::vector<int32_t>{1, 2}));
    EXPECT_FALSE((**all)[1].token_ids.has_value());
    ASSERT_TRUE((**all)[2].token_ids.has_value());
    EXPECT_TRUE((**all)[2].token_ids->empty());
    EXPECT_LT((**all)[0].seq, (**all)[1].seq);

    auto desc = store->list_items("", "conv_1", {.limit = 2});
    ASSERT_TRUE(desc.ok() && desc->has_value());
    ASSERT_EQ((*desc)->items.size(), 2u);
    EXPECT_EQ((*desc)->items[0].item_id, "msg_c");
    EXPECT_EQ((*desc)->items[1].item_id, "msg_b");
    EXPECT_TRUE((*desc)->has_more);
    auto next = store->list_items("", "conv_1", {.after = "msg_b", .limit = 2});
    ASSERT_EQ((*next)->items.size(), 1u);
    EXPECT_EQ((*next)->items[0].item_id, "msg_a");
    EXPECT_FALSE((*next)->has_more);
    auto asc = store->list_items("", "conv_1", {.after = "msg_a", .limit = 5, .order = ItemOrder::kAscending});
    ASSERT_EQ((*asc)->items.size(), 2u);
    EXPECT_EQ((*asc)->items[0].item_id, "msg_b");
    auto bad_after = store->list_items("", "conv_1", {.after = "msg_zzz"});
    EXPECT_EQ(bad_after.status().code(), StatusCode::kNotFound);

    EXPECT_TRUE(store->get_item("", "conv_1", "msg_b")->has_value());
    EXPECT_TRUE(*store->delete_item("", "conv_1", "msg_b"));
    EXPECT_FALSE(store->get_item("", "conv_1", "msg_b")->has_value());
    EXPECT_FALSE(*store->delete_item("", "conv_1", "msg_b"));

    EXPECT_TRUE(*store->update_conversation("", "conv_1", R"({"k":"w"})", R"({"ctx":1})"));
    auto conv = store->get_conversation("", "conv_1");
    EXPECT_EQ((*conv)->metadata_json, R"({"k":"w"})");
    EXPECT_EQ((*conv)->context_json, R"({"ctx":1})");
    EXPECT_TRUE(*store->update_conversation("", "conv_1", std::nullopt, std::nullopt));
    EXPECT_EQ((*store->get_conversation("", "conv_1"))->metadata_json, R"({"k":"w"})");

    EXPECT_TRUE(*store->delete_conversation("", "conv_1"));
    EXPECT_FALSE(store->all_items("", "conv_1")->has_value());
}

TEST(SessionStore, ExpiredRowsAreAbsentOnReadAndSweptLater) {
    FakeClock clock;
    auto store = open_or_die({.path = ":memory:", .ttl_s = 100, .sweep_interval_s = 1000, .now_s = clock.fn()});
    ASSERT_TRUE(store->put_response(response("resp_old", "")).ok());
    ASSERT_TRUE(store->put_conversation({.id = "conv_old", .owner = ""}).ok());
    clock.now += 60;
    ASSERT_TRUE(store->put_response(response("resp_new", "")).ok());
    clock.now += 50;  // resp_old is 110 s old, resp_new 50 s
    EXPECT_FALSE(store->get_response("", "resp_old")->has_value());
    EXPECT_FALSE(store->get_conversation("", "conv_old")->has_value());
    EXPECT_FALSE(*store->delete_response("", "resp_old"));
    EXPECT_TRUE(store->get_response("", "resp_new")->has_value());
    EXPECT_EQ(store->num_responses(), 2);  // not yet swept: the interval has not passed
    clock.now += 1000;
    ASSERT_TRUE(store->put_response(response("resp_newest", "")).ok());  // a write past the interval sweeps
    EXPECT_EQ(store->num_responses(), 1);
    EXPECT_EQ(store->num_conversations(), 0);
    EXPECT_TRUE(store->get_response("", "resp_newest")->has_value());
}

TEST(SessionStore, SweepNowDeletesOnlyExpiredRows) {
    FakeClock clock;
    auto store = open_or_die({.path = ":memory:", .ttl_s = 10, .now_s = clock.fn()});
    ASSERT_TRUE(store->put_response(response("resp_a", "")).ok());
    clock.now += 5;
    ASSERT_TRUE(store->put_response(response("resp_b", "")).ok());
    clock.now += 6;
    auto removed = store->sweep();
    ASSERT_TRUE(removed.ok());
    EXPECT_EQ(*removed, 1);
    EXPECT_TRUE(store->get_response("", "resp_b")->has_value());
}

TEST(SessionStore, CapDeletesTheOldestFirst) {
    FakeClock clock;
    auto store = open_or_die({.path = ":memory:", .max_rows = 3, .now_s = clock.fn()});
    for (int i = 0; i < 5; ++i) {
        clock.now += 1;
        ASSERT_TRUE(store->put_response(response("resp_" + std::to_string(i), "")).ok());
    }
    EXPECT_EQ(store->num_responses(), 3);
    EXPECT_FALSE(store->get_response("", "resp_0")->has_value());
    EXPECT_FALSE(store->get_response("", "resp_1")->has_value());
    for (int i = 2; i < 5; ++i) EXPECT_TRUE(store->get_response("", "resp_" + std::to_string(i))->has_value()) << i;

    for (int i = 0; i < 4; ++i) {
        clock.now += 1;
        ASSERT_TRUE(store->put_conversation({.id = "conv_" + std::to_string(i), .owner = ""}).ok());
    }
    EXPECT_EQ(store->num_conversations(), 3);
    EXPECT_FALSE(store->get_conversation("", "conv_0")->has_value());
    EXPECT_TRUE(store->get_conversation("", "conv_3")->has_value());
}

TEST(SessionStore, ReopenAfterCloseKeepsData) {
    TempDir dir;
    const std::string path = dir.path() + "/sessions.db";
    {
        auto store = open_or_die({.path = path});
        ASSERT_TRUE(store->put_response(response("resp_1", "key-a")).ok());
        ASSERT_TRUE(store->put_conversation({.id = "conv_1", .owner = "key-a"}).ok());
        ASSERT_TRUE(*store->append_items("key-a", "conv_1", {item("msg_1", std::vector<int32_t>{4, 5})}));
    }
    auto store = open_or_die({.path = path});
    auto r = store->get_response("key-a", "resp_1");
    ASSERT_TRUE(r.ok() && r->has_value());
    EXPECT_EQ((*r)->output_ids, (std::vector<int32_t>{7, 8}));
    auto items = store->all_items("key-a", "conv_1");
    ASSERT_TRUE(items.ok() && items->has_value());
    ASSERT_EQ((*items)->size(), 1u);
    EXPECT_EQ((**items)[0].token_ids, (std::vector<int32_t>{4, 5}));
}

TEST(SessionStore, SurvivesAProcessKilledWithoutClosing) {
    TempDir dir;
    const std::string path = dir.path() + "/sessions.db";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        auto store = SessionStore::open({.path = path});
        if (!store.ok()) _exit(3);
        for (int i = 0; i < 20; ++i) {
            if (!(*store)->put_response(response("resp_" + std::to_string(i), "")).ok()) _exit(4);
        }
        _exit(0);  // no destructor, no sqlite3_close: the WAL is left behind as after a kill
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
    auto store = open_or_die({.path = path});
    EXPECT_EQ(store->num_responses(), 20);
    auto r = store->get_response("", "resp_19");
    ASSERT_TRUE(r.ok() && r->has_value());
    EXPECT_EQ((*r)->prompt_ids, (std::vector<int32_t>{1, 2, 3}));
}

TEST(SessionStore, TextFileIsRefusedNamingThePath) {
    TempDir dir;
    const std::string path = dir.write("notes.db", "this is a text file, not a database\n" + std::string(5000, 'x'));
    auto store = SessionStore::open({.path = path});
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status().message();
    EXPECT_NE(store.status().message().find("not a"), std::string::npos) << store.status().message();
    EXPECT_EQ(TempDir::read(path).substr(0, 9), "this is a");  // left untouched
}

TEST(SessionStore, DamagedDatabaseIsRefused) {
    TempDir dir;
    const std::string path = dir.path() + "/sessions.db";
    {
        auto store = open_or_die({.path = path});
        for (int i = 0; i < 200; ++i) ASSERT_TRUE(store->put_response(response("resp_" + std::to_string(i), "")).ok());
    }
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    // Overwrite the pages after the first (the header stays valid, the b-trees do not).
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(8192, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    f.close();
    auto store = SessionStore::open({.path = path});
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status().message();
}

TEST(SessionStore, UnwritablePathsAreRefusedNamingThePath) {
    TempDir dir;
    const std::string missing_dir = dir.path() + "/no/such/dir/sessions.db";
    auto a = SessionStore::open({.path = missing_dir});
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.status().message().find(missing_dir), std::string::npos) << a.status().message();
    EXPECT_NE(a.status().message().find("cannot open"), std::string::npos) << a.status().message();

    auto b = SessionStore::open({.path = dir.path()});  // a directory
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find(dir.path()), std::string::npos) << b.status().message();
}

TEST(SessionStore, ForeignDatabaseAndNewerSchemaAreRefused) {
    TempDir dir;
    const std::string newer_path = dir.path() + "/newer.db";
    { auto store = open_or_die({.path = newer_path}); }
    {
        auto db = SqliteDb::open(newer_path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("UPDATE schema_version SET version=99").ok());
    }
    auto newer = SessionStore::open({.path = newer_path});
    ASSERT_FALSE(newer.ok());
    EXPECT_NE(newer.status().message().find("schema version 99"), std::string::npos) << newer.status().message();
    EXPECT_NE(newer.status().message().find(newer_path), std::string::npos);

    const std::string foreign_path = dir.path() + "/other.db";
    {
        auto db = SqliteDb::open(foreign_path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("CREATE TABLE photos(id INTEGER)").ok());
    }
    auto other = SessionStore::open({.path = foreign_path});
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.status().message().find("another program"), std::string::npos) << other.status().message();
}

// A background response's final row and its owed webhook event commit together, or neither does;
// owed events outlive their response's row.
TEST(SessionStore, TheOwedWebhookCommitsWithTheRowOrNotAtAll) {
    TempDir dir;
    const std::string path = dir.path() + "/s.db";
    auto store = open_or_die({.path = path});
    const OwedWebhook owed{.object_id = "resp_1", .event_type = "response.completed", .created_at_ms = 99};
    ASSERT_TRUE(store->put_response(response("resp_1", ""), owed).ok());
    ASSERT_TRUE(store->put_response(response("resp_2", "")).ok());  // no webhook owed
    auto all = store->owed_webhooks();
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->size(), 1u);
    EXPECT_EQ((*all)[0].object_id, "resp_1");
    EXPECT_EQ((*all)[0].event_type, "response.completed");
    EXPECT_EQ((*all)[0].created_at_ms, 99);
    EXPECT_TRUE(store->owed_webhooks("resp_2")->empty());
    EXPECT_TRUE(*store->delete_response("", "resp_1"));
    EXPECT_EQ(store->owed_webhooks("resp_1")->size(), 1u);  // the event is still owed
    ASSERT_TRUE(store->clear_owed_webhook(owed).ok());
    EXPECT_TRUE(store->owed_webhooks()->empty());

    {
        auto db = SqliteDb::open(path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("DROP TABLE response_webhook_outbox").ok());
    }
    EXPECT_FALSE(store->put_response(response("resp_3", ""), OwedWebhook{.object_id = "resp_3",
                                                                         .event_type = "response.failed"}).ok());
    EXPECT_FALSE(store->get_response("", "resp_3")->has_value());  // rolled back with it
    EXPECT_TRUE(store->put_response(response("resp_4", "")).ok());  // a row alone still goes in
}

// A file of the first schema (no outbox table) is migrated in place, its rows kept.
TEST(SessionStore, AVersion1FileIsMigratedToVersion2) {
    TempDir dir;
    const std::string path = dir.path() + "/s.db";
    {
        auto store = open_or_die({.path = path});
        ASSERT_TRUE(store->put_response(response("resp_old", "key-a")).ok());
    }
    {
        auto db = SqliteDb::open(path);
        ASSERT_TRUE(db.ok());
        ASSERT_TRUE((*db)->exec("DROP TABLE response_webhook_outbox; UPDATE schema_version SET version=1").ok());
    }
    auto store = open_or_die({.path = path});
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->get_response("key-a", "resp_old")->has_value());
    ASSERT_TRUE(store->put_response(response("resp_new", ""), OwedWebhook{.object_id = "resp_new",
                                                                         .event_type = "response.failed"}).ok());
    EXPECT_EQ(store->owed_webhooks()->size(), 1u);
    auto db = SqliteDb::open(path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(*(*db)->single_text("SELECT version FROM schema_version"), "2");
}

TEST(SessionStore, ConfigIsValidated) {
    EXPECT_FALSE(SessionStore::open({.path = ""}).ok());
    EXPECT_FALSE(SessionStore::open({.path = ":memory:", .max_rows = 0}).ok());
    EXPECT_FALSE(SessionStore::open({.path = ":memory:", .ttl_s = -1}).ok());
}

}  // namespace
}  // namespace hichat::session
