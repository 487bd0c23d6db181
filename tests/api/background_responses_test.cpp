// BackgroundResponses over an in-memory SessionStore, with a recorded engine cancel and hook: the
// stored status moves queued -> in_progress -> one final state and never back; the hook fires once
// per response with its final status; cancel stores "cancelled" and cancels the engine request, and a
// later finish (the generation ending anyway) writes nothing; fail_unfinished fails what a stopped
// server left queued or in progress, and nothing else.
#include "api/background_responses.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

using Json = nlohmann::json;

struct Recorder {
    std::vector<uint64_t> cancelled;                           // engine request ids
    std::vector<std::pair<std::string, std::string>> ended;    // (response id, status)
};

class BackgroundResponsesTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto store = session::SessionStore::open({.path = ":memory:"});
        ASSERT_TRUE(store.ok()) << store.status().message();
        store_ = std::move(store).value();
        background_ = make(*store_);
    }

    std::unique_ptr<BackgroundResponses> make(session::SessionStore& store, bool owe_webhooks = false) {
        return std::make_unique<BackgroundResponses>(
            store, [this](engine::RequestId id) { rec_.cancelled.push_back(id.value); },
            [this](const std::string& id, std::string_view status) { rec_.ended.emplace_back(id, std::string(status)); },
            owe_webhooks);
    }

    // The events owed, as "id:type".
    std::vector<std::string> owed() {
        std::vector<std::string> out;
        auto all = store_->owed_webhooks();
        EXPECT_TRUE(all.ok());
        if (all.ok()) {
            for (const auto& o : *all) out.push_back(o.object_id + ":" + o.event_type);
        }
        return out;
    }

    // A queued background response as ResponsesService stores it.
    std::pair<session::StoredResponse, ResponseState> queued(const std::string& id, const std::string& owner = "") {
        ResponseState s{.id = id, .created_at = 1700000000, .model = "tiny", .output_item_id = "msg_1",
                        .background = true};
        s.status = "queued";
        session::StoredResponse row{.id = id, .owner = owner, .model = "tiny", .response_json = response_json(s).dump(),
                                    .input_items_json = "[]", .context_json = "{}"};
        return {row, s};
    }

    void add(const std::string& id, uint64_t request_id, const std::string& owner = "") {
        auto [row, state] = queued(id, owner);
        ASSERT_TRUE(background_->add(row, state, engine::RequestId{request_id}).ok());
    }

    Json stored(const std::string& id, const std::string& owner = "") {
        auto r = store_->get_response(owner, id);
        EXPECT_TRUE(r.ok() && r->has_value()) << id;
        return r.ok() && r->has_value() ? Json::parse((*r)->response_json) : Json();
    }

    // What ResponsesService's persist does for a finished turn: the final row.
    BackgroundResponses::PersistFinal persist_as(const std::string& id, const std::string& status) {
        return [this, id, status](const std::optional<session::OwedWebhook>& owed) -> std::optional<ApiError> {
            auto [row, s] = queued(id);
            s.status = status;
            s.text = "done";
            s.output_done = true;
            row.response_json = response_json(s).dump();
            EXPECT_TRUE(store_->put_response(row, owed).ok());
            return std::nullopt;
        };
    }

    std::unique_ptr<session::SessionStore> store_;
    Recorder rec_;
    std::unique_ptr<BackgroundResponses> background_;
};

TEST(BackgroundEventType, FinalStatusesOnly) {
    EXPECT_EQ(background_event_type("completed"), "response.completed");
    EXPECT_EQ(background_event_type("incomplete"), "response.incomplete");
    EXPECT_EQ(background_event_type("failed"), "response.failed");
    EXPECT_EQ(background_event_type("cancelled"), "response.cancelled");
    EXPECT_EQ(background_event_type("queued"), "");
    EXPECT_EQ(background_event_type("in_progress"), "");
}

TEST_F(BackgroundResponsesTest, QueuedThenInProgressThenCompletedReportedOnce) {
    add("resp_a", 7);
    Json j = stored("resp_a");
    EXPECT_EQ(j["status"], "queued");
    EXPECT_EQ(j["background"], true);
    EXPECT_EQ(j["output"], Json::array());
    EXPECT_TRUE(j["usage"].is_null());
    EXPECT_EQ(background_->num_running(), 1u);

    background_->mark_started("resp_a");
    EXPECT_EQ(stored("resp_a")["status"], "in_progress");

    EXPECT_FALSE(background_->finish("resp_a", "completed", persist_as("resp_a", "completed")));
    j = stored("resp_a");
    EXPECT_EQ(j["status"], "completed");
    EXPECT_EQ(j["output"][0]["content"][0]["text"], "done");
    ASSERT_EQ(rec_.ended.size(), 1u);
    EXPECT_EQ(rec_.ended[0], (std::pair<std::string, std::string>{"resp_a", "completed"}));
    EXPECT_EQ(background_->num_running(), 0u);

    // Late news about an ended response changes nothing and reports nothing.
    background_->mark_started("resp_a");
    background_->fail("resp_a", {.message = "late", .code = "x"});
    EXPECT_FALSE(background_->cancel("resp_a"));
    EXPECT_EQ(stored("resp_a")["status"], "completed");
    EXPECT_EQ(rec_.ended.size(), 1u);
    EXPECT_TRUE(rec_.cancelled.empty());
}

TEST_F(BackgroundResponsesTest, CancelStoresCancelledCancelsTheEngineAndAFinishAfterItWritesNothing) {
    add("resp_c", 11);
    background_->mark_started("resp_c");
    auto object = background_->cancel("resp_c");
    ASSERT_TRUE(object);
    EXPECT_EQ(Json::parse(*object)["status"], "cancelled");
    EXPECT_EQ(stored("resp_c")["status"], "cancelled");
    EXPECT_EQ(rec_.cancelled, std::vector<uint64_t>{11});

    bool persisted = false;
    EXPECT_FALSE(background_->finish("resp_c", "completed",
                                     [&](const std::optional<session::OwedWebhook>&) -> std::optional<ApiError> {
                                         persisted = true;
                                         return std::nullopt;
                                     }));
    EXPECT_FALSE(persisted) << "a cancelled response's turn is not stored";
    background_->fail("resp_c", {.message = "cancelled in the engine", .code = "server_shutting_down"});
    EXPECT_EQ(stored("resp_c")["status"], "cancelled");
    EXPECT_FALSE(background_->cancel("resp_c")) << "the second cancel finds nothing running";
    ASSERT_EQ(rec_.ended.size(), 1u);
    EXPECT_EQ(rec_.ended[0].second, "cancelled");
}

TEST_F(BackgroundResponsesTest, FailStoresTheErrorAndAPersistErrorLeavesItForFail) {
    add("resp_f", 3);
    // The store failed while persisting: returned to the sink, nothing reported yet.
    auto e = background_->finish("resp_f", "completed", [](const std::optional<session::OwedWebhook>&) -> std::optional<ApiError> {
        return ApiError{.http_status = 500, .message = "session store: disk full", .type = "server_error"};
    });
    ASSERT_TRUE(e);
    EXPECT_TRUE(rec_.ended.empty());
    background_->fail("resp_f", *e);
    const Json j = stored("resp_f");
    EXPECT_EQ(j["status"], "failed");
    EXPECT_EQ(j["error"]["code"], "server_error") << "an error without a code is a server_error";
    EXPECT_EQ(j["error"]["message"], "session store: disk full");
    ASSERT_EQ(rec_.ended.size(), 1u);
    EXPECT_EQ(rec_.ended[0].second, "failed");

    add("resp_t", 4);
    background_->fail("resp_t", {.http_status = 504, .message = "timed out", .code = "request_timeout"});
    EXPECT_EQ(stored("resp_t")["error"]["code"], "request_timeout");
}

TEST_F(BackgroundResponsesTest, IncompleteIsReportedAsIncomplete) {
    add("resp_i", 5);
    EXPECT_FALSE(background_->finish("resp_i", "incomplete", persist_as("resp_i", "incomplete")));
    ASSERT_EQ(rec_.ended.size(), 1u);
    EXPECT_EQ(rec_.ended[0].second, "incomplete");
}

TEST_F(BackgroundResponsesTest, DropDeletesTheQueuedRowAndReportsNothing) {
    add("resp_d", 9, "key1");
    background_->drop("resp_d");
    auto r = store_->get_response("key1", "resp_d");
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->has_value());
    EXPECT_TRUE(rec_.ended.empty());
    EXPECT_EQ(background_->num_running(), 0u);
}

TEST_F(BackgroundResponsesTest, FailUnfinishedFailsWhatAStoppedServerLeftAndNothingElse) {
    add("resp_q", 1, "k");          // queued
    add("resp_p", 2);               // in progress
    background_->mark_started("resp_p");
    add("resp_done", 3);            // completed
    ASSERT_FALSE(background_->finish("resp_done", "completed", persist_as("resp_done", "completed")));
    // A response created without background, and one whose JSON is not an object: never touched.
    ResponseState plain{.id = "resp_plain", .model = "tiny", .output_item_id = "msg_2"};
    ASSERT_TRUE(store_->put_response({.id = "resp_plain", .model = "tiny", .response_json = response_json(plain).dump(),
                                      .input_items_json = "[]", .context_json = "{}"}).ok());
    rec_.ended.clear();

    // A new server on the same store: nothing of the old one runs in it.
    auto restarted = make(*store_);
    auto n = restarted->fail_unfinished();
    ASSERT_TRUE(n.ok()) << n.status().message();
    EXPECT_EQ(*n, 2);
    for (auto [id, owner] : {std::pair{"resp_q", "k"}, std::pair{"resp_p", ""}}) {
        const Json j = stored(id, owner);
        EXPECT_EQ(j["status"], "failed") << id;
        EXPECT_EQ(j["error"]["code"], "server_error") << id;
        EXPECT_EQ(j["background"], true) << id;
    }
    EXPECT_EQ(stored("resp_done")["status"], "completed");
    EXPECT_EQ(stored("resp_plain")["status"], "in_progress");
    ASSERT_EQ(rec_.ended.size(), 2u);
    for (const auto& [id, status] : rec_.ended) EXPECT_EQ(status, "failed") << id;

    // Run again: nothing is left to fail.
    rec_.ended.clear();
    n = restarted->fail_unfinished();
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 0);
    EXPECT_TRUE(rec_.ended.empty());
    EXPECT_TRUE(owed().empty());  // webhooks off: no event is ever owed
}

// Webhooks on: each final row is committed with its event owed, whichever way the response ended;
// the rows before it owe nothing.
TEST_F(BackgroundResponsesTest, WithWebhooksEveryFinalRowOwesItsEvent) {
    background_ = make(*store_, /*owe_webhooks=*/true);
    add("resp_done", 1);
    add("resp_failed", 2);
    add("resp_cancelled", 3);
    add("resp_left", 4);
    background_->mark_started("resp_done");
    background_->mark_started("resp_left");
    EXPECT_TRUE(owed().empty());  // queued and in progress owe nothing

    ASSERT_FALSE(background_->finish("resp_done", "incomplete", persist_as("resp_done", "incomplete")));
    background_->fail("resp_failed", {.message = "timeout", .code = "timeout"});
    ASSERT_TRUE(background_->cancel("resp_cancelled"));
    EXPECT_EQ(owed(), (std::vector<std::string>{"resp_done:response.incomplete", "resp_failed:response.failed",
                                                "resp_cancelled:response.cancelled"}));
    auto one = store_->owed_webhooks("resp_failed");
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->size(), 1u);
    EXPECT_GT((*one)[0].created_at_ms, int64_t{1'600'000'000'000});  // the time it ended, in ms

    // The server is killed with resp_left in progress: the next one fails it, owing response.failed.
    auto restarted = make(*store_, /*owe_webhooks=*/true);
    ASSERT_EQ(*restarted->fail_unfinished(), 1);
    EXPECT_EQ(store_->owed_webhooks("resp_left")->size(), 1u);
    EXPECT_EQ((*store_->owed_webhooks("resp_left"))[0].event_type, "response.failed");
}

}  // namespace
}  // namespace hichat::api
