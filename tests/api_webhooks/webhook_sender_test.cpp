// WebhookSender end to end against in-process receivers on 127.0.0.1 that check every request's
// signature. Backoff is 1-4 ms without jitter; tests wait for conditions (receiver records,
// delivery reports) with a generous deadline and never sleep.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "../common/temp_dir.h"
#include "api/webhooks/webhook_sender.h"
#include "test_receiver.h"

namespace hichat::api::webhooks::test {
namespace {

using api::test_support::TempDir;
using Json = nlohmann::json;

WebhookConfig fast_config(std::vector<std::string> urls, int max_attempts = 5) {
    WebhookConfig config;
    config.target_urls = std::move(urls);
    config.secret = kSecret;
    config.allowed_hosts = {"127.0.0.1"};
    config.retry = {.backoff_base_ms = 1, .backoff_cap_ms = 4, .jitter = 0.0, .max_attempts = max_attempts};
    config.connect_timeout_ms = 5000;
    config.response_timeout_ms = 5000;
    return config;
}

std::unique_ptr<WebhookSender> start_or_fail(const WebhookConfig& config, ReportLog& log) {
    auto sender = WebhookSender::start(config, log.observer());
    EXPECT_TRUE(sender.ok()) << sender.status().message();
    return sender.ok() ? std::move(sender).value() : nullptr;
}

// 500 to the first two requests of each webhook-id, then 200.
int fail_twice_then_accept(const ReceivedRequest& r) { return r.num_attempt_of_id <= 2 ? 500 : 200; }
int accept_all(const ReceivedRequest&) { return 200; }

size_t num_accepted(const std::vector<ReceivedRequest>& requests, const std::string& id) {
    size_t n = 0;
    for (const auto& r : requests) n += (r.id == id && r.answered >= 200 && r.answered < 300) ? 1 : 0;
    return n;
}

TEST(WebhookSender, FailsTwiceThenAcceptsOneDeliveryWithOneId) {
    auto receiver = TestReceiver::start(fail_twice_then_accept, test_signer());
    ASSERT_NE(receiver, nullptr);
    ReportLog log;
    auto sender = start_or_fail(fast_config({receiver->url()}), log);
    ASSERT_NE(sender, nullptr);

    auto id = sender->enqueue("batch.completed", R"({"id": "batch_abc", "status": "completed"})");
    ASSERT_TRUE(id.ok()) << id.status().message();
    ASSERT_TRUE(log.wait_for_finals(1));

    const auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 3u);
    for (const auto& r : requests) {
        EXPECT_EQ(r.id, *id);  // the same webhook-id on every attempt
        EXPECT_TRUE(r.signature_ok) << r.signature;
        EXPECT_EQ(r.body, requests[0].body);  // and the same body
        EXPECT_EQ(r.content_type, "application/json");
        EXPECT_EQ(r.method, "POST");
        EXPECT_EQ(r.target, "/hook");
    }
    EXPECT_EQ(num_accepted(requests, *id), 1u);
    Json body = Json::parse(requests[0].body);
    EXPECT_EQ(body["type"], "batch.completed");
    EXPECT_EQ(body["data"], Json::parse(R"({"id": "batch_abc", "status": "completed"})"));
    EXPECT_EQ(body["object"], "event");
    EXPECT_EQ(body["id"].get<std::string>().rfind("evt_", 0), 0u);
    const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
    EXPECT_LE(std::abs(body["created_at"].get<int64_t>() - now_s), 60);

    const auto reports = log.reports();
    ASSERT_EQ(reports.size(), 3u);
    EXPECT_EQ(reports[0].state, DeliveryState::kRetrying);
    EXPECT_EQ(reports[0].http_status, 500);
    EXPECT_EQ(reports[1].state, DeliveryState::kRetrying);
    EXPECT_EQ(reports[2].state, DeliveryState::kDelivered);
    EXPECT_EQ(reports[2].num_attempts, 3);
    EXPECT_EQ(reports[2].http_status, 200);
    EXPECT_EQ(reports[2].message_id, *id);
    EXPECT_EQ(sender->num_pending(), 0u);
}

TEST(WebhookSender, SeveralEventsToTwoTargetsAreEachAcceptedOnce) {
    auto flaky = TestReceiver::start(fail_twice_then_accept, test_signer());
    auto steady = TestReceiver::start(accept_all, test_signer());
    ASSERT_NE(flaky, nullptr);
    ASSERT_NE(steady, nullptr);
    ReportLog log;
    auto sender = start_or_fail(fast_config({flaky->url(), steady->url()}), log);
    ASSERT_NE(sender, nullptr);

    std::set<std::string> ids;
    for (int i = 0; i < 6; ++i) {
        auto id = sender->enqueue("response.completed", R"({"n": )" + std::to_string(i) + "}");
        ASSERT_TRUE(id.ok()) << id.status().message();
        ids.insert(*id);
    }
    ASSERT_EQ(ids.size(), 6u);  // a fresh id per event
    ASSERT_TRUE(log.wait_for_finals(12));

    for (const auto& final_report : log.finals()) EXPECT_EQ(final_report.state, DeliveryState::kDelivered);
    const auto flaky_requests = flaky->requests(), steady_requests = steady->requests();
    EXPECT_EQ(flaky_requests.size(), 18u);
    EXPECT_EQ(steady_requests.size(), 6u);
    for (const std::string& id : ids) {
        EXPECT_EQ(num_accepted(flaky_requests, id), 1u) << id;
        EXPECT_EQ(num_accepted(steady_requests, id), 1u) << id;
        EXPECT_EQ(flaky->requests_with_id(id).size(), 3u) << id;
        EXPECT_EQ(flaky->requests_with_id(id)[0].body, steady->requests_with_id(id)[0].body);
    }
    for (const auto& r : flaky_requests) EXPECT_TRUE(r.signature_ok);
    for (const auto& r : steady_requests) EXPECT_TRUE(r.signature_ok);
}

TEST(WebhookSender, GoneStopsRetrying) {
    auto receiver = TestReceiver::start(
        [](const ReceivedRequest& r) { return Json::parse(r.body)["type"] == "gone.test" ? 410 : 200; }, test_signer());
    ASSERT_NE(receiver, nullptr);
    ReportLog log;
    auto sender = start_or_fail(fast_config({receiver->url()}), log);
    ASSERT_NE(sender, nullptr);

    auto gone = sender->enqueue("gone.test", "{}");
    ASSERT_TRUE(gone.ok());
    ASSERT_TRUE(log.wait_for_finals(1));
    auto later = sender->enqueue("other.test", "{}");  // goes through after the 410 was handled
    ASSERT_TRUE(later.ok());
    ASSERT_TRUE(log.wait_for_finals(2));

    const auto finals = log.finals();
    EXPECT_EQ(finals[0].message_id, *gone);
    EXPECT_EQ(finals[0].state, DeliveryState::kGone);
    EXPECT_EQ(finals[0].num_attempts, 1);
    EXPECT_EQ(finals[0].http_status, 410);
    EXPECT_EQ(finals[1].state, DeliveryState::kDelivered);
    EXPECT_EQ(receiver->requests_with_id(*gone).size(), 1u);
    EXPECT_EQ(log.reports().size(), 2u);  // no retry was scheduled
}

TEST(WebhookSender, TargetOutsideTheAllowListIsNeverContacted) {
    auto outside = TestReceiver::start(accept_all, test_signer());
    auto allowed = TestReceiver::start(accept_all, test_signer());
    ASSERT_NE(outside, nullptr);
    ASSERT_NE(allowed, nullptr);
    ReportLog log;

    // A configured target whose host is not listed: a start-up error naming host and flag.
    WebhookConfig config = fast_config({outside->url()});
    config.allowed_hosts = {"hooks.example.com"};
    auto refused = WebhookSender::start(config, log.observer());
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("'127.0.0.1'"), std::string::npos) << refused.status().message();
    EXPECT_NE(refused.status().message().find("--webhook-allow"), std::string::npos) << refused.status().message();

    // Per-event targets: only 127.0.0.1 is listed; "localhost" resolves to the outside receiver
    // but is not listed, nor are other spellings of loopback.
    auto sender = start_or_fail(fast_config({allowed->url()}), log);
    ASSERT_NE(sender, nullptr);
    const std::string port = std::to_string(outside->port());
    for (const std::string& url : {"http://localhost:" + port + "/hook", "http://LOCALHOST:" + port + "/hook",
                                   "http://[::1]:" + port + "/hook", "http://127.0.0.2:" + port + "/hook"}) {
        auto id = sender->enqueue_to(url, "response.completed", "{}");
        ASSERT_FALSE(id.ok()) << url;
        EXPECT_NE(id.status().message().find("--webhook-allow"), std::string::npos) << id.status().message();
    }
    for (const std::string& url : {"http://2130706433:" + port + "/", "http://user@127.0.0.1:" + port + "/",
                                   "http://0x7f.0.0.1:" + port + "/"}) {
        EXPECT_FALSE(sender->enqueue_to(url, "response.completed", "{}").ok()) << url;
    }
    EXPECT_EQ(sender->num_pending(), 0u);

    // A delivery to the allowed target completes: the refused ones were never queued before it.
    auto ok = sender->enqueue_to(allowed->url(), "response.completed", "{}");
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    ASSERT_TRUE(log.wait_for_finals(1));
    EXPECT_EQ(log.finals()[0].message_id, *ok);
    EXPECT_EQ(log.reports().size(), 1u);
    EXPECT_EQ(outside->num_connections(), 0u);
    EXPECT_TRUE(outside->requests().empty());
}

TEST(WebhookSender, ConnectionRefusedRetriesThenGivesUp) {
    ReportLog log;
    const std::string url = "http://127.0.0.1:" + std::to_string(unused_port()) + "/hook";
    auto sender = start_or_fail(fast_config({url}, /*max_attempts=*/4), log);
    ASSERT_NE(sender, nullptr);
    auto id = sender->enqueue("batch.completed", "{}");
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(log.wait_for_finals(1));

    const auto reports = log.reports();
    ASSERT_EQ(reports.size(), 4u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(reports[i].state, DeliveryState::kRetrying);
        EXPECT_EQ(reports[i].num_attempts, i + 1);
    }
    EXPECT_EQ(reports[3].state, DeliveryState::kGaveUp);
    EXPECT_EQ(reports[3].num_attempts, 4);
    EXPECT_EQ(reports[3].http_status, 0);
    EXPECT_NE(reports[3].error.find("connect"), std::string::npos) << reports[3].error;
    EXPECT_EQ(sender->num_pending(), 0u);
}

TEST(WebhookSender, RefusesBadEventsAndAFullQueue) {
    ReportLog log;
    const std::string url = "http://127.0.0.1:" + std::to_string(unused_port()) + "/hook";
    WebhookConfig config = fast_config({url}, /*max_attempts=*/100);
    config.retry.backoff_base_ms = config.retry.backoff_cap_ms = 3'600'000;  // the first retry waits an hour
    config.max_pending = 2;
    auto sender = start_or_fail(config, log);
    ASSERT_NE(sender, nullptr);
    EXPECT_FALSE(sender->enqueue("Not A Type", "{}").ok());
    EXPECT_FALSE(sender->enqueue("x", "[]").ok());
    ASSERT_TRUE(sender->enqueue("x", "{}").ok());
    ASSERT_TRUE(sender->enqueue("x", "{}").ok());
    auto full = sender->enqueue("x", "{}");
    ASSERT_FALSE(full.ok());
    EXPECT_NE(full.status().message().find("queue full"), std::string::npos);
    EXPECT_EQ(sender->num_pending(), 2u);
    auto none = WebhookSender::start(fast_config({}), log.observer());
    ASSERT_TRUE(none.ok());
    EXPECT_NE((*none)->enqueue("x", "{}").status().message().find("--webhook-url"), std::string::npos);
}

TEST(WebhookSender, HttpsTargetWithACaFile) {
    TempDir dir;
    TestCertificate cert = make_test_certificate("DNS:localhost,IP:127.0.0.1");
    auto receiver = TestReceiver::start(fail_twice_then_accept, test_signer(), 0, cert);
    ASSERT_NE(receiver, nullptr);
    ReportLog log;
    WebhookConfig config = fast_config({receiver->url("localhost")});
    config.allowed_hosts = {"localhost"};
    config.ca_file = dir.write("ca.pem", cert.cert_pem);
    auto sender = start_or_fail(config, log);
    ASSERT_NE(sender, nullptr);
    auto id = sender->enqueue("response.completed", R"({"id": "resp_1"})");
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(log.wait_for_finals(1));
    EXPECT_EQ(log.finals()[0].state, DeliveryState::kDelivered);
    EXPECT_EQ(num_accepted(receiver->requests(), *id), 1u);
    EXPECT_EQ(receiver->requests().size(), 3u);
}

// At least once across restarts: a delivery whose attempts failed is in the state db when the
// sender stops, and the next sender on that db delivers it with the same id and body.
TEST(WebhookSender, RestartResumesPendingDeliveriesWithTheSameId) {
    TempDir dir;
    const int port = unused_port();  // nothing listens yet: every attempt is refused
    WebhookConfig config = fast_config({"http://127.0.0.1:" + std::to_string(port) + "/hook"}, /*max_attempts=*/100);
    config.state_db_path = dir.path() + "/webhooks.db";
    std::string id;
    {
        ReportLog log;
        auto sender = start_or_fail(config, log);
        ASSERT_NE(sender, nullptr);
        auto enqueued = sender->enqueue("batch.completed", R"({"id": "batch_restart"})");
        ASSERT_TRUE(enqueued.ok());
        id = *enqueued;
        ASSERT_TRUE(log.wait_for([](const std::vector<DeliveryReport>& all) {
            return !all.empty() && all.back().num_attempts >= 2;  // recorded in the db before reported
        }));
        EXPECT_TRUE(log.finals().empty());
    }  // stopped with the delivery pending

    auto receiver = TestReceiver::start(accept_all, test_signer(), port);
    ASSERT_NE(receiver, nullptr);
    {
        ReportLog log;
        auto sender = start_or_fail(config, log);
        ASSERT_NE(sender, nullptr);
        ASSERT_TRUE(log.wait_for_finals(1));
        const DeliveryReport report = log.finals()[0];
        EXPECT_EQ(report.state, DeliveryState::kDelivered);
        EXPECT_EQ(report.message_id, id);
        EXPECT_GE(report.num_attempts, 3);  // the attempts before the restart count
    }
    const auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].id, id);
    EXPECT_TRUE(requests[0].signature_ok);
    EXPECT_EQ(Json::parse(requests[0].body)["data"]["id"], "batch_restart");

    ReportLog log;  // delivered: nothing left to resume
    auto third = start_or_fail(config, log);
    ASSERT_NE(third, nullptr);
    EXPECT_EQ(third->num_pending(), 0u);
}

// A sender stopped right after enqueue() returned still has the event in its state db (serve stops it
// right after the batch runner, whose last event may be that young), and the next sender delivers it.
TEST(WebhookSender, EventEnqueuedJustBeforeStopIsResumed) {
    TempDir dir;
    const int port = unused_port();
    WebhookConfig config = fast_config({"http://127.0.0.1:" + std::to_string(port) + "/hook"});
    config.state_db_path = dir.path() + "/webhooks.db";
    std::string id;
    {
        auto sender = WebhookSender::start(config);
        ASSERT_TRUE(sender.ok()) << sender.status().message();
        auto enqueued = (*sender)->enqueue("batch.completed", R"({"id": "batch_last"})");
        ASSERT_TRUE(enqueued.ok());
        id = *enqueued;
    }
    auto receiver = TestReceiver::start(accept_all, test_signer(), port);
    ASSERT_NE(receiver, nullptr);
    ReportLog log;
    auto sender = start_or_fail(config, log);
    ASSERT_NE(sender, nullptr);
    ASSERT_TRUE(log.wait_for_finals(1));
    EXPECT_EQ(log.finals()[0].state, DeliveryState::kDelivered);
    const auto requests = receiver->requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].id, id);
}

TEST(WebhookSender, RefusesAStateDbOfAnotherProgram) {
    TempDir dir;
    const std::string path = dir.write("not_a_db", "this is not SQLite, just text that is long enough to matter\n");
    WebhookConfig config = fast_config({});
    config.state_db_path = path;
    auto sender = WebhookSender::start(config);
    ASSERT_FALSE(sender.ok());
    EXPECT_NE(sender.status().message().find(path), std::string::npos) << sender.status().message();
}

}  // namespace
}  // namespace hichat::api::webhooks::test
