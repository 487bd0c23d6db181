// WebhookOutbox across kills (issue 22): an event owed by a store (committed with the final state) is
// delivered at least once whatever moment the server dies at, with one webhook-id derived from
// (object id, event type).
//
// A kill is a child process that writes and then _exits (no destructor, no sqlite3_close), or a
// sender destroyed with its delivery pending. Receivers on 127.0.0.1 check every signature; tests
// wait for conditions with a generous deadline and never sleep.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <regex>
#include <thread>

#include "../common/temp_dir.h"
#include "api/webhooks/webhook_outbox.h"
#include "api/webhooks/webhook_payload.h"
#include "api/webhooks/webhook_sender.h"
#include "session/batch_store.h"
#include "session/session_store.h"
#include "test_receiver.h"

namespace hichat::api::webhooks::test {
namespace {

using api::test_support::TempDir;
using Json = nlohmann::json;

constexpr int64_t kBatchEndMs = 1'700'000'123'000;
constexpr int64_t kResponseEndMs = 1'700'000'456'000;

int accept_all(const ReceivedRequest&) { return 200; }

WebhookConfig config_for(const std::string& url, const std::string& state_db) {
    WebhookConfig config;
    config.target_urls = {url};
    config.secret = kSecret;
    config.allowed_hosts = {"127.0.0.1"};
    // Refused attempts retry every 20 ms for 2 s: a delivery stays pending while nobody listens.
    config.retry = {.backoff_base_ms = 20, .backoff_cap_ms = 20, .jitter = 0.0, .max_attempts = 100};
    config.state_db_path = state_db;
    return config;
}

// The server's stores on one session database.
struct Stores {
    std::unique_ptr<session::SessionStore> sessions;
    std::unique_ptr<session::BatchStore> batches;

    static Stores open(const std::string& path) {
        Stores s;
        auto sessions = session::SessionStore::open({.path = path});
        auto batches = session::BatchStore::open({.path = path});
        EXPECT_TRUE(sessions.ok()) << sessions.status().message();
        EXPECT_TRUE(batches.ok()) << batches.status().message();
        if (sessions.ok()) s.sessions = std::move(sessions).value();
        if (batches.ok()) s.batches = std::move(batches).value();
        return s;
    }
    size_t num_owed() {
        auto b = batches->owed_webhooks();
        auto r = sessions->owed_webhooks();
        EXPECT_TRUE(b.ok() && r.ok());
        return (b.ok() ? b->size() : 0) + (r.ok() ? r->size() : 0);
    }
};

// What the batch runner and BackgroundResponses write at a final state with webhooks on.
Status finish_batch_owing(session::BatchStore& store, const std::string& id) {
    HICHAT_RETURN_IF_ERROR(store.create_batch({.id = id, .endpoint = "/v1/chat/completions", .input_file_id = "file-in"}));
    return store.finish_batch(id, {.status = session::BatchStatus::kCompleted,
                                   .webhook = session::OwedWebhook{.object_id = id, .event_type = "batch.completed",
                                                                   .created_at_ms = kBatchEndMs}});
}

Status put_final_response_owing(session::SessionStore& store, const std::string& id) {
    return store.put_response({.id = id, .model = "tiny", .response_json = R"({"status":"failed","background":true})",
                               .input_items_json = "[]", .context_json = "{}"},
                              session::OwedWebhook{.object_id = id, .event_type = "response.failed",
                                                   .created_at_ms = kResponseEndMs});
}

// Runs `write` in a child process that then dies without closing anything, as under SIGKILL.
void in_killed_process(const std::function<bool()>& write) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(write() ? 0 : 3);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

bool wait_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

// A barrier: a plain event accepted after everything sent before it was answered (the receiver
// serves one connection at a time, and the sender has nothing else pending).
void send_barrier(WebhookSender& sender, TestReceiver& receiver) {
    auto id = sender.enqueue("test.barrier", R"({"id": "barrier"})");
    ASSERT_TRUE(id.ok()) << id.status().message();
    ASSERT_TRUE(receiver.wait_for([&](const std::vector<ReceivedRequest>& all) {
        for (const auto& r : all) {
            if (r.id == *id && r.answered == 200) return true;
        }
        return false;
    }));
}

TEST(WebhookOutbox, DerivedIdsAreStableAndDifferPerObjectAndEvent) {
    const std::string id = message_id_for("batch_1", "batch.completed");
    EXPECT_TRUE(std::regex_match(id, std::regex("msg_[0-9a-f]{32}"))) << id;
    EXPECT_TRUE(std::regex_match(event_id_for("batch_1", "batch.completed"), std::regex("evt_[0-9a-f]{32}")));
    EXPECT_EQ(message_id_for("batch_1", "batch.completed"), id);
    EXPECT_NE(message_id_for("batch_2", "batch.completed"), id);
    EXPECT_NE(message_id_for("batch_1", "batch.failed"), id);
    EXPECT_NE(message_id_for("batch_1batch.", "completed"), id);  // the parts are kept apart
    EXPECT_NE(event_id_for("batch_1", "batch.completed").substr(4), id.substr(4));
}

// Killed after the final states were committed (with their events owed), before the hooks ran: the
// next start enqueues each event once, with its derived id and the time of the final state; a start
// after that enqueues nothing.
TEST(WebhookOutbox, EventsOwedWhenKilledBeforeTheEnqueueAreSentAtTheNextStartOnce) {
    TempDir dir;
    const std::string db = dir.path() + "/sessions.db";
    in_killed_process([&] {
        Stores s = Stores::open(db);
        return s.batches && s.sessions && finish_batch_owing(*s.batches, "batch_k").ok() &&
               put_final_response_owing(*s.sessions, "resp_k").ok();
    });
    auto receiver = TestReceiver::start(accept_all, test_signer());
    ASSERT_NE(receiver, nullptr);
    const WebhookConfig config = config_for(receiver->url(), dir.path() + "/sessions-webhooks.db");
    const std::string batch_msg = message_id_for("batch_k", "batch.completed");
    const std::string response_msg = message_id_for("resp_k", "response.failed");
    {
        Stores stores = Stores::open(db);
        ASSERT_EQ(stores.num_owed(), 2u);  // the kill left both owed
        auto sender = WebhookSender::start(config);
        ASSERT_TRUE(sender.ok()) << sender.status().message();
        WebhookOutbox outbox(**sender, stores.batches.get(), stores.sessions.get());
        auto num_sent = outbox.send_all_owed();
        ASSERT_TRUE(num_sent.ok()) << num_sent.status().message();
        EXPECT_EQ(*num_sent, 2);
        ASSERT_TRUE(wait_until([&] { return stores.num_owed() == 0; }));  // cleared once in the state db
        send_barrier(**sender, *receiver);

        ASSERT_EQ(receiver->requests_with_id(batch_msg).size(), 1u);
        ASSERT_EQ(receiver->requests_with_id(response_msg).size(), 1u);
        const ReceivedRequest batch = receiver->requests_with_id(batch_msg)[0];
        EXPECT_TRUE(batch.signature_ok);
        const Json body = Json::parse(batch.body);
        EXPECT_EQ(body["type"], "batch.completed");
        EXPECT_EQ(body["data"], Json({{"id", "batch_k"}}));
        EXPECT_EQ(body["id"], event_id_for("batch_k", "batch.completed"));
        EXPECT_EQ(body["created_at"], kBatchEndMs / 1000);  // the final state's time, not the send's
        EXPECT_EQ(Json::parse(receiver->requests_with_id(response_msg)[0].body)["type"], "response.failed");
        // Stopped only once the sender has heard the answers: else it resumes them (at least once).
        ASSERT_TRUE(wait_until([&] { return (*sender)->num_pending() == 0; }));
    }
    const size_t num_before = receiver->requests().size();
    {
        Stores stores = Stores::open(db);
        auto sender = WebhookSender::start(config);
        ASSERT_TRUE(sender.ok()) << sender.status().message();
        EXPECT_EQ((*sender)->num_pending(), 0u);
        WebhookOutbox outbox(**sender, stores.batches.get(), stores.sessions.get());
        auto num_sent = outbox.send_all_owed();
        ASSERT_TRUE(num_sent.ok());
        EXPECT_EQ(*num_sent, 0);
        send_barrier(**sender, *receiver);
    }
    EXPECT_EQ(receiver->requests().size(), num_before + 1);  // the barrier only
    EXPECT_EQ(receiver->requests_with_id(batch_msg).size(), 1u);
    EXPECT_EQ(receiver->requests_with_id(response_msg).size(), 1u);
}

// Killed after the sender stored the delivery, before the owed row was cleared: at the next start
// the sender resumes the delivery and the outbox enqueues the event again; the sender keeps one, and
// the receiver sees one request with the id.
TEST(WebhookOutbox, AnEventBothOwedAndPendingIsDeliveredOnce) {
    TempDir dir;
    const std::string db = dir.path() + "/sessions.db";
    const int port = unused_port();  // nobody listens in the first run: the delivery stays pending
    const WebhookConfig config = config_for("http://127.0.0.1:" + std::to_string(port) + "/hook",
                                            dir.path() + "/sessions-webhooks.db");
    const std::string msg = message_id_for("resp_p", "response.failed");
    {
        Stores stores = Stores::open(db);
        ASSERT_TRUE(put_final_response_owing(*stores.sessions, "resp_p").ok());
        auto sender = WebhookSender::start(config);
        ASSERT_TRUE(sender.ok()) << sender.status().message();
        WebhookOutbox outbox(**sender, stores.batches.get(), stores.sessions.get());
        auto sent = outbox.send_response_event("resp_p");
        ASSERT_TRUE(sent.ok()) << sent.status().message();
        ASSERT_EQ(sent->size(), 1u);
        EXPECT_EQ((*sent)[0].message_id, msg);
        EXPECT_EQ((*sent)[0].event_type, "response.failed");
        ASSERT_TRUE(wait_until([&] { return stores.num_owed() == 0; }));
        EXPECT_EQ((*sender)->num_pending(), 1u);
        // The clear "did not happen": the row as it was before it (what a kill right before it leaves).
        ASSERT_TRUE(put_final_response_owing(*stores.sessions, "resp_p").ok());
    }  // the sender stops with the delivery in its state db

    Stores stores = Stores::open(db);
    ASSERT_EQ(stores.num_owed(), 1u);
    auto sender = WebhookSender::start(config);
    ASSERT_TRUE(sender.ok()) << sender.status().message();
    EXPECT_EQ((*sender)->num_pending(), 1u);  // resumed from the state db
    WebhookOutbox outbox(**sender, stores.batches.get(), stores.sessions.get());
    auto num_sent = outbox.send_all_owed();
    ASSERT_TRUE(num_sent.ok());
    EXPECT_EQ(*num_sent, 1);
    ASSERT_TRUE(wait_until([&] { return stores.num_owed() == 0; }));  // the second enqueue was handled
    EXPECT_EQ((*sender)->num_pending(), 1u);  // one delivery, not two
    // Only now can an attempt succeed: the two enqueues met before any delivery could end.
    auto receiver = TestReceiver::start(accept_all, test_signer(), port);
    ASSERT_NE(receiver, nullptr);
    ASSERT_TRUE(receiver->wait_for([&](const std::vector<ReceivedRequest>& all) {
        for (const auto& r : all) {
            if (r.id == msg && r.answered == 200) return true;
        }
        return false;
    }));
    send_barrier(**sender, *receiver);
    EXPECT_EQ(receiver->requests_with_id(msg).size(), 1u);
    EXPECT_EQ(receiver->requests().size(), 2u);  // the event and the barrier
    EXPECT_TRUE(wait_until([&] { return (*sender)->num_pending() == 0; }));
}

// Nothing owed (the final state written without webhooks, or the event already handed over): the
// hook's call enqueues nothing.
TEST(WebhookOutbox, NothingOwedSendsNothing) {
    TempDir dir;
    auto receiver = TestReceiver::start(accept_all, test_signer());
    ASSERT_NE(receiver, nullptr);
    Stores stores = Stores::open(dir.path() + "/sessions.db");
    ASSERT_TRUE(stores.batches->create_batch({.id = "batch_n", .endpoint = "/v1/chat/completions"}).ok());
    ASSERT_TRUE(stores.batches->finish_batch("batch_n", {.status = session::BatchStatus::kFailed}).ok());
    auto sender = WebhookSender::start(config_for(receiver->url(), ""));
    ASSERT_TRUE(sender.ok()) << sender.status().message();
    WebhookOutbox outbox(**sender, stores.batches.get(), stores.sessions.get());
    auto sent = outbox.send_batch_event("batch_n");
    ASSERT_TRUE(sent.ok());
    EXPECT_TRUE(sent->empty());
    auto all = outbox.send_all_owed();
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(*all, 0);
    EXPECT_EQ((*sender)->num_pending(), 0u);
}

}  // namespace
}  // namespace hichat::api::webhooks::test
