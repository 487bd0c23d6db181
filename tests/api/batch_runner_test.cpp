// BatchRunner over an in-memory BatchStore and a temporary FileFolder, with a scripted submitter in
// place of the engine: lines recorded before a restart never run again, refusals and failed answers go
// to the error file, a full queue (429) is tried again and recorded once, cancel stops the feed and
// cancels the lines in flight, a missing input file fails the batch, an expired batch lists what did
// not run; the "batch finished" hook fires once per batch.
#include "api/batch_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "../common/temp_dir.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;
using session::BatchStatus;

std::string line(const std::string& custom_id) {
    return R"({"custom_id":")" + custom_id +
           R"(","method":"POST","url":"/v1/completions","body":{"prompt":")" + custom_id + R"(","max_tokens":2}})";
}

// What the engine path would do with a line, scripted per custom_id (read back from the body's prompt).
struct FakeEngine {
    std::mutex mu;
    std::map<std::string, int> num_submitted;          // by prompt (= custom_id)
    std::map<std::string, std::vector<int>> statuses;   // answers in turn; none left: 200
    std::vector<std::shared_ptr<ResponseWriter>> held;  // lines of `hold`: never answered
    std::set<std::string> hold;
    int num_cancelled = 0;

    BatchLineSubmitter submitter() {
        return [this](Endpoint endpoint, std::string body, const std::string& owner, std::shared_ptr<ResponseWriter> w) {
            EXPECT_EQ(endpoint, Endpoint::kCompletions);
            EXPECT_EQ(owner, "key-a");
            const Json j = Json::parse(body);
            EXPECT_EQ(j["priority"], kBatchLinePriority);
            const std::string id = j["prompt"];
            std::unique_lock lock(mu);
            ++num_submitted[id];
            if (hold.count(id)) {
                w->on_client_gone([this] { ++num_cancelled; });  // called by the runner's thread, mu not held
                held.push_back(std::move(w));
                return;
            }
            int status = 200;
            if (auto& s = statuses[id]; !s.empty()) {
                status = s.front();
                s.erase(s.begin());
            }
            lock.unlock();
            const std::string answer = status == 200 ? R"({"id":"cmpl-)" + id + R"(","object":"text_completion"})"
                                                     : R"({"error":{"message":"refused","code":"queue_full"}})";
            w->send(status, "application/json", answer);
        };
    }
    int submitted(const std::string& id) {
        std::lock_guard lock(mu);
        return num_submitted.count(id) ? num_submitted[id] : 0;
    }
};

class BatchRunnerTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto store = session::BatchStore::open({.path = ":memory:", .now_s = [this] { return now_s_.load(); }});
        ASSERT_TRUE(store.ok());
        store_ = std::move(store).value();
        auto folder = session::FileFolder::open(dir_.path() + "/files");
        ASSERT_TRUE(folder.ok());
        folder_.emplace(std::move(folder).value());
    }

    // A batch of the given lines, validating, owned by key-a.
    std::string add_batch(const std::string& jsonl, int64_t expires_at = 2'000'000'000) {
        const std::string file_id = "file-in" + std::to_string(num_batches_);
        EXPECT_TRUE(folder_->write(file_id, jsonl).ok());
        EXPECT_TRUE(store_->put_file({.id = file_id, .owner = "key-a", .num_bytes = 1, .purpose = "batch"}).ok());
        const std::string id = "batch_" + std::to_string(num_batches_++);
        EXPECT_TRUE(store_->create_batch({.id = id, .owner = "key-a", .endpoint = "/v1/completions",
                                          .input_file_id = file_id, .expires_at = expires_at}).ok());
        return id;
    }

    void start(FakeEngine& engine, int max_in_flight = 2, bool owe_webhooks = false) {
        runner_ = std::make_unique<BatchRunner>(
            BatchRunnerConfig{.max_lines_in_flight = max_in_flight, .retry_delay_ms = 10,
                              .now_s = [this] { return now_s_.load(); },
                              .on_batch_finished = [this](const session::StoredBatch& b) {
                                  std::lock_guard lock(mu_);
                                  finished_.push_back(b.id + ":" + std::string(session::batch_status_name(b.status)));
                                  // The event is owed before the hook hears of the batch.
                                  auto owed = store_->owed_webhooks(b.id);
                                  owed_at_hook_ += owed.ok() ? static_cast<int>(owed->size()) : -100;
                              },
                              .owe_webhooks = owe_webhooks},
            *store_, *folder_, engine.submitter());
        runner_->start();
    }

    session::StoredBatch wait_final(const std::string& id) {
        for (int i = 0; i < 1000; ++i) {
            auto b = store_->batch(id);
            if (b.ok() && b->has_value() && session::is_final((*b)->status)) return **b;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ADD_FAILURE() << "batch " << id << " did not finish";
        return {};
    }

    // The custom ids of a file's lines, in order.
    std::vector<std::string> custom_ids(const std::string& file_id) {
        std::vector<std::string> ids;
        auto bytes = folder_->read(file_id);
        EXPECT_TRUE(bytes.ok()) << file_id;
        if (!bytes.ok()) return ids;
        for (size_t at = 0; at < bytes->size();) {
            const size_t end = bytes->find('\n', at);
            const Json j = Json::parse(bytes->substr(at, end - at));
            ids.push_back(j["custom_id"].is_null() ? "null" : j["custom_id"].get<std::string>());
            at = end + 1;
        }
        return ids;
    }

    std::vector<std::string> finished() {
        std::lock_guard lock(mu_);
        return finished_;
    }

    api::test_support::TempDir dir_;
    std::atomic<int64_t> now_s_{1'000'000};
    std::unique_ptr<session::BatchStore> store_;
    std::optional<session::FileFolder> folder_;
    std::unique_ptr<BatchRunner> runner_;
    int num_batches_ = 0;
    std::mutex mu_;
    std::vector<std::string> finished_;
    int owed_at_hook_ = 0;  // guarded by mu_
};

TEST_F(BatchRunnerTest, ResumeRunsOnlyTheLinesNotRecordedAndOutputIsInInputOrder) {
    const std::string id = add_batch(line("a") + "\n" + line("b") + "\n" + line("c") + "\n" + line("d") + "\n" + line("e") + "\n");
    // A run before the restart validated the batch and recorded lines 0 and 2.
    ASSERT_TRUE(*store_->start_batch(id, 5, {}));
    ASSERT_TRUE(*store_->record_result(id, {.line = 0, .ok = true, .result_json = answered_line("a", 200, "{}")}));
    ASSERT_TRUE(*store_->record_result(id, {.line = 2, .ok = true, .result_json = answered_line("c", 200, "{}")}));
    FakeEngine engine;
    start(engine);
    const session::StoredBatch b = wait_final(id);
    EXPECT_EQ(b.status, BatchStatus::kCompleted);
    EXPECT_EQ(engine.submitted("a"), 0);
    EXPECT_EQ(engine.submitted("c"), 0);
    for (const char* id_ran : {"b", "d", "e"}) EXPECT_EQ(engine.submitted(id_ran), 1) << id_ran;
    EXPECT_EQ(b.num_requests_total, 5);
    EXPECT_EQ(b.num_requests_completed, 5);
    EXPECT_EQ(b.num_requests_failed, 0);
    EXPECT_GT(b.finalizing_at, 0);
    EXPECT_EQ(b.output_file_id, BatchRunner::output_file_id(id));
    EXPECT_EQ(b.error_file_id, "");
    EXPECT_EQ(custom_ids(b.output_file_id), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
    auto output = store_->get_file("key-a", b.output_file_id);
    ASSERT_TRUE(output.ok() && output->has_value());
    EXPECT_EQ((*output)->purpose, "batch_output");
    EXPECT_EQ(finished(), (std::vector<std::string>{id + ":completed"}));
    EXPECT_TRUE(store_->owed_webhooks()->empty());  // webhooks off: nothing owed
}

TEST(BatchEventType, FinalStatesOnly) {
    EXPECT_EQ(batch_event_type(BatchStatus::kCompleted), "batch.completed");
    EXPECT_EQ(batch_event_type(BatchStatus::kFailed), "batch.failed");
    EXPECT_EQ(batch_event_type(BatchStatus::kCancelled), "batch.cancelled");
    EXPECT_EQ(batch_event_type(BatchStatus::kExpired), "batch.expired");
    EXPECT_EQ(batch_event_type(BatchStatus::kInProgress), "");
    EXPECT_EQ(batch_event_type(BatchStatus::kCancelling), "");
}

// Webhooks on: the final state is committed with its event owed, already there when the hook runs.
TEST_F(BatchRunnerTest, WithWebhooksTheFinalStateOwesItsEvent) {
    const std::string done = add_batch(line("a") + "\n");
    const std::string failed = add_batch("\n");  // no lines: failed
    FakeEngine engine;
    start(engine, 2, /*owe_webhooks=*/true);
    EXPECT_EQ(wait_final(done).status, BatchStatus::kCompleted);
    EXPECT_EQ(wait_final(failed).status, BatchStatus::kFailed);
    runner_->stop();
    auto owed = store_->owed_webhooks(done);
    ASSERT_TRUE(owed.ok());
    ASSERT_EQ(owed->size(), 1u);
    EXPECT_EQ((*owed)[0].event_type, "batch.completed");
    EXPECT_EQ((*owed)[0].created_at_ms, 1'000'000'000);  // the runner's clock, in ms
    ASSERT_EQ(store_->owed_webhooks(failed)->size(), 1u);
    EXPECT_EQ((*store_->owed_webhooks(failed))[0].event_type, "batch.failed");
    std::lock_guard lock(mu_);
    EXPECT_EQ(owed_at_hook_, 2);
}

TEST_F(BatchRunnerTest, RefusedLinesAndErrorAnswersGoToTheErrorFileAFullQueueIsRetried) {
    const std::string id = add_batch(line("a") + "\nnot json\n" + line("b") + "\n" + line("c") + "\n");
    FakeEngine engine;
    engine.statuses["b"] = {400};
    engine.statuses["c"] = {429, 429};  // refused twice for a full queue, then answered
    start(engine, 1);
    const session::StoredBatch b = wait_final(id);
    EXPECT_EQ(b.status, BatchStatus::kCompleted);
    EXPECT_EQ(b.num_requests_total, 4);
    EXPECT_EQ(b.num_requests_completed, 2);
    EXPECT_EQ(b.num_requests_failed, 2);
    EXPECT_EQ(engine.submitted("c"), 3);
    EXPECT_EQ(custom_ids(b.output_file_id), (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(custom_ids(b.error_file_id), (std::vector<std::string>{"null", "b"}));
    auto errors = folder_->read(b.error_file_id);
    ASSERT_TRUE(errors.ok());
    const Json first = Json::parse(errors->substr(0, errors->find('\n')));
    EXPECT_EQ(first["error"]["code"], "invalid_json");
    const Json second = Json::parse(errors->substr(errors->find('\n') + 1));
    EXPECT_EQ(second["response"]["status_code"], 400);
    EXPECT_TRUE(second["error"].is_null());
}

TEST_F(BatchRunnerTest, CancelStopsTheFeedCancelsLinesInFlightAndKeepsWhatFinished) {
    std::string jsonl;
    for (int i = 0; i < 6; ++i) jsonl += line("l" + std::to_string(i)) + "\n";
    const std::string id = add_batch(jsonl);
    FakeEngine engine;
    engine.hold = {"l1", "l2", "l3", "l4", "l5"};  // l0 answers at once; l1 and l2 then stay in flight
    start(engine, 2);
    for (int i = 0; i < 1000 && engine.submitted("l2") == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(engine.submitted("l2"), 1);
    ASSERT_EQ(store_->batch(id)->value().num_requests_completed, 1);  // l0 is recorded
    auto cancelling = store_->cancel_batch("key-a", id);
    ASSERT_TRUE(cancelling.ok() && cancelling->has_value());
    EXPECT_EQ((*cancelling)->status, BatchStatus::kCancelling);
    runner_->notify();
    const session::StoredBatch b = wait_final(id);
    EXPECT_EQ(b.status, BatchStatus::kCancelled);
    EXPECT_GT(b.cancelled_at, 0);
    EXPECT_EQ(engine.num_cancelled, 2);
    for (const char* never : {"l3", "l4", "l5"}) EXPECT_EQ(engine.submitted(never), 0) << never;
    EXPECT_EQ(b.num_requests_completed, 1);
    EXPECT_EQ(custom_ids(b.output_file_id), (std::vector<std::string>{"l0"}));
    EXPECT_EQ(finished(), (std::vector<std::string>{id + ":cancelled"}));
}

TEST_F(BatchRunnerTest, MissingOrEmptyInputFailsTheBatchWithItsError) {
    const std::string missing = add_batch(line("a") + "\n");
    ASSERT_TRUE(folder_->remove("file-in0").ok());
    const std::string empty = add_batch("\n\n");
    FakeEngine engine;
    start(engine);
    const session::StoredBatch m = wait_final(missing);
    EXPECT_EQ(m.status, BatchStatus::kFailed);
    EXPECT_EQ(Json::parse(m.errors_json)["data"][0]["code"], "input_file_missing");
    EXPECT_EQ(m.output_file_id, "");
    const session::StoredBatch e = wait_final(empty);
    EXPECT_EQ(e.status, BatchStatus::kFailed);
    EXPECT_EQ(Json::parse(e.errors_json)["data"][0]["code"], "empty_file");
    EXPECT_EQ(engine.submitted("a"), 0);
}

TEST_F(BatchRunnerTest, AnExpiredBatchListsTheLinesThatDidNotRun) {
    const std::string id = add_batch(line("a") + "\n" + line("b") + "\n", /*expires_at=*/1'000'010);
    ASSERT_TRUE(*store_->start_batch(id, 2, {}));
    ASSERT_TRUE(*store_->record_result(id, {.line = 0, .ok = true, .result_json = answered_line("a", 200, "{}")}));
    now_s_ = 1'000'010;  // the window is over before the runner starts
    FakeEngine engine;
    start(engine);
    const session::StoredBatch b = wait_final(id);
    EXPECT_EQ(b.status, BatchStatus::kExpired);
    EXPECT_EQ(engine.submitted("b"), 0);
    EXPECT_EQ(custom_ids(b.output_file_id), (std::vector<std::string>{"a"}));
    auto errors = folder_->read(b.error_file_id);
    ASSERT_TRUE(errors.ok());
    EXPECT_EQ(Json::parse(*errors)["error"]["code"], "batch_expired");
    EXPECT_EQ(b.num_requests_failed, 1);
}

}  // namespace
}  // namespace hichat::api
