// The worker thread runs one io_context. A delivery waits in ready_ until fewer than
// kMaxConcurrentAttempts attempts are in flight, makes its attempt through HttpClient, and on a
// retryable failure waits on its own steady_timer before it joins ready_ again. Every state change
// is written to the state db (when configured) before the observer hears of it.
#include "api/webhooks/webhook_sender.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <random>
#include <set>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "api/http/http_client.h"
#include "api/http/url.h"
#include "api/webhooks/delivery_store.h"
#include "api/webhooks/host_allow_list.h"
#include "api/webhooks/webhook_payload.h"
#include "api/webhooks/webhook_signer.h"

namespace hichat::api::webhooks {
namespace {

namespace asio = boost::asio;

constexpr int kMaxConcurrentAttempts = 16;  // connections the sender holds open at once
constexpr int kStopWaitS = 10;              // the destructor's wait for enqueued events to be added

spdlog::logger& logger() {
    // stderr, where `hichat serve` writes its other messages; not registered, so tests may make several.
    static const auto log = std::make_shared<spdlog::logger>("webhooks", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    return *log;
}

int64_t unix_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

struct Delivery {
    PendingDelivery pending;
    Url url;
};

}  // namespace

struct WebhookSender::Impl {
    Impl(const WebhookConfig& c, WebhookSigner s, HostAllowList a, DeliveryObserver o)
        : config(c), signer(std::move(s)), allow(std::move(a)), observer(std::move(o)), work(io.get_executor()) {}

    Result<std::string> enqueue_to_urls(const std::vector<std::string>& urls, std::string_view event_type,
                                        std::string_view data_json);
    Result<std::string> enqueue_message(const std::vector<std::string>& urls, std::string_view event_type,
                                        const std::string& message_id, const std::string& body,
                                        std::function<void()> on_stored);
    bool add(std::shared_ptr<Delivery> d, bool is_new);  // worker thread, as are the ones below
    void wait_then_retry(std::shared_ptr<Delivery> d, int64_t delay_ms);
    void pump();
    void attempt(std::shared_ptr<Delivery> d);
    void on_attempt_done(const std::shared_ptr<Delivery>& d, Result<int> result);
    void report(const Delivery& d, DeliveryState state, int http_status, const std::string& error);
    void store_or_log(const Status& s);

    const WebhookConfig config;
    const WebhookSigner signer;
    const HostAllowList allow;
    const DeliveryObserver observer;
    std::atomic<size_t> num_pending{0};
    // io is declared before what its pending handlers point to, so those are gone before it.
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    std::unique_ptr<HttpClient> client;
    std::unique_ptr<DeliveryStore> store;                // null without state_db_path
    std::set<std::pair<std::string, std::string>> pending_keys;  // (message_id, url) not finished; worker thread only
    std::deque<std::shared_ptr<Delivery>> ready;         // worker thread only
    int num_in_flight = 0;                               // worker thread only
    std::mt19937_64 rng{std::random_device{}()};         // jitter; worker thread only
    std::thread worker;
};

Result<std::string> WebhookSender::Impl::enqueue_to_urls(const std::vector<std::string>& urls,
                                                         std::string_view event_type, std::string_view data_json) {
    if (urls.empty()) return invalid_argument("no webhook target configured (--webhook-url)");
    auto body = make_payload(event_type, data_json, unix_ms_now(), new_event_id());
    if (!body.ok()) return body.status();
    return enqueue_message(urls, event_type, new_message_id(), *body, {});
}

Result<std::string> WebhookSender::Impl::enqueue_message(const std::vector<std::string>& urls,
                                                         std::string_view event_type, const std::string& message_id,
                                                         const std::string& body, std::function<void()> on_stored) {
    const int64_t now_ms = unix_ms_now();
    std::vector<std::shared_ptr<Delivery>> deliveries;
    for (const std::string& text : urls) {
        auto url = parse_url(text);
        if (!url.ok()) return url.status();  // configured URLs were checked at start
        deliveries.push_back(std::make_shared<Delivery>(Delivery{
            {.message_id = message_id, .url = text, .body = body, .num_attempts = 0, .next_attempt_at_ms = now_ms},
            std::move(url).value()}));
    }
    if (num_pending.fetch_add(deliveries.size()) + deliveries.size() > config.max_pending) {
        num_pending.fetch_sub(deliveries.size());
        return internal_error("webhook queue full: " + std::to_string(config.max_pending) +
                              " deliveries pending; event '" + std::string(event_type) + "' dropped");
    }
    asio::post(io, [this, deliveries = std::move(deliveries), on_stored = std::move(on_stored)] {
        bool stored = true;
        for (const auto& d : deliveries) stored = add(d, /*is_new=*/true) && stored;
        if (stored && on_stored) on_stored();
    });
    return message_id;
}

void WebhookSender::Impl::store_or_log(const Status& s) {
    // The delivery goes on from memory; only a restart would lose it.
    if (!s.ok()) logger().warn("{}", s.message());
}

// Returns false when the delivery's state-db write failed. One already pending (the same message to
// the same URL: an owed event enqueued again) is not added twice; its row is written if missing.
bool WebhookSender::Impl::add(std::shared_ptr<Delivery> d, bool is_new) {
    bool stored = true;
    if (store && is_new) {
        const Status s = store->insert(d->pending);  // keeps a row that is there already
        store_or_log(s);
        stored = s.ok();
    }
    if (!pending_keys.emplace(d->pending.message_id, d->pending.url).second) {
        num_pending.fetch_sub(1);
        return stored;
    }
    const int64_t delay_ms = d->pending.next_attempt_at_ms - unix_ms_now();
    if (delay_ms > 0) {
        wait_then_retry(std::move(d), delay_ms);
    } else {
        ready.push_back(std::move(d));
        pump();
    }
    return stored;
}

void WebhookSender::Impl::wait_then_retry(std::shared_ptr<Delivery> d, int64_t delay_ms) {
    auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(delay_ms));
    timer->async_wait([this, timer, d = std::move(d)](const boost::system::error_code& ec) mutable {
        if (ec) return;
        ready.push_back(std::move(d));
        pump();
    });
}

void WebhookSender::Impl::pump() {
    while (num_in_flight < kMaxConcurrentAttempts && !ready.empty()) {
        std::shared_ptr<Delivery> d = std::move(ready.front());
        ready.pop_front();
        ++num_in_flight;
        attempt(std::move(d));
    }
}

void WebhookSender::Impl::attempt(std::shared_ptr<Delivery> d) {
    const int64_t timestamp_s = unix_ms_now() / 1000;
    const PendingDelivery& p = d->pending;
    HttpPost post{.url = d->url,
                  .headers = {{"webhook-id", p.message_id},
                              {"webhook-timestamp", std::to_string(timestamp_s)},
                              {"webhook-signature", signer.sign(p.message_id, timestamp_s, p.body)}},
                  .content_type = "application/json",
                  .body = p.body};
    client->post(std::move(post), [this, d](Result<int> result) {
        // HttpClient completes on its own strand; deliveries are worker-thread state, and the
        // worker is the only thread running io, so this runs there too.
        --num_in_flight;
        on_attempt_done(d, std::move(result));
        pump();
    });
}

void WebhookSender::Impl::on_attempt_done(const std::shared_ptr<Delivery>& d, Result<int> result) {
    PendingDelivery& p = d->pending;
    ++p.num_attempts;
    const int status = result.ok() ? *result : 0;
    const std::string error = result.ok() ? "" : result.status().message();
    DeliveryState state = DeliveryState::kRetrying;
    if (status >= 200 && status < 300) {
        state = DeliveryState::kDelivered;
    } else if (status == 410) {
        state = DeliveryState::kGone;
        logger().warn("webhook {} to {}: 410 Gone, not retried", p.message_id, d->url.origin());
    } else if (p.num_attempts >= config.retry.max_attempts) {
        state = DeliveryState::kGaveUp;
        logger().warn("webhook {} to {}: given up after {} attempts; last: {}", p.message_id, d->url.origin(),
                      p.num_attempts, status != 0 ? "HTTP " + std::to_string(status) : error);
    }
    if (state == DeliveryState::kRetrying) {
        const int64_t delay_ms =
            config.retry.delay_ms(p.num_attempts, std::uniform_real_distribution<double>(0.0, 1.0)(rng));
        p.next_attempt_at_ms = unix_ms_now() + delay_ms;
        if (store) store_or_log(store->record_failure(p.message_id, p.url, p.num_attempts, p.next_attempt_at_ms));
        report(*d, state, status, error);
        wait_then_retry(d, delay_ms);
        return;
    }
    if (store) store_or_log(store->erase(p.message_id, p.url));
    pending_keys.erase({p.message_id, p.url});
    num_pending.fetch_sub(1);
    report(*d, state, status, error);
}

void WebhookSender::Impl::report(const Delivery& d, DeliveryState state, int http_status, const std::string& error) {
    if (!observer) return;
    observer({.state = state, .message_id = d.pending.message_id, .url = d.pending.url,
              .num_attempts = d.pending.num_attempts, .http_status = http_status, .error = error});
}

WebhookSender::WebhookSender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebhookSender::~WebhookSender() {
    // The events enqueued before this are added (written to the state db) first: enqueue() posts from
    // other threads into io's one FIFO queue, so a barrier posted now runs after their add(). Bounded,
    // as a state-db write may wait on a lock (busy_timeout).
    auto barrier = std::make_shared<std::promise<void>>();
    std::future<void> added = barrier->get_future();
    asio::post(impl_->io, [barrier] { barrier->set_value(); });
    added.wait_for(std::chrono::seconds(kStopWaitS));
    impl_->io.stop();
    if (impl_->worker.joinable()) impl_->worker.join();
    const size_t left = impl_->num_pending.load();
    if (left > 0 && !impl_->store) {
        logger().warn("{} webhook deliveries not finished are dropped (no --webhook-state-db)", left);
    }
}

Result<std::unique_ptr<WebhookSender>> WebhookSender::start(const WebhookConfig& config, DeliveryObserver observer) {
    HICHAT_RETURN_IF_ERROR(config.validate());
    auto signer = WebhookSigner::from_secret(config.secret);
    auto allow = HostAllowList::parse(config.allowed_hosts);
    HICHAT_RETURN_IF_ERROR(signer.status());
    HICHAT_RETURN_IF_ERROR(allow.status());
    auto impl = std::make_unique<Impl>(config, std::move(signer).value(), std::move(allow).value(), std::move(observer));
    auto client = HttpClient::create(impl->io, {.connect_timeout_ms = config.connect_timeout_ms,
                                                .response_timeout_ms = config.response_timeout_ms,
                                                .ca_file = config.ca_file});
    if (!client.ok()) return invalid_argument("webhook client: " + client.status().message());
    impl->client = std::move(client).value();
    std::vector<std::shared_ptr<Delivery>> resumed;
    if (!config.state_db_path.empty()) {
        auto store = DeliveryStore::open(config.state_db_path);
        if (!store.ok()) return store.status();
        impl->store = std::move(store).value();
        auto rows = impl->store->load_all();
        if (!rows.ok()) return rows.status();
        for (PendingDelivery& row : *rows) {
            auto url = parse_url(row.url);
            if (!url.ok() || !impl->allow.allows(url->host)) {
                logger().warn("webhook {}: target '{}' is not allowed by --webhook-allow any more; dropped",
                              row.message_id, url.ok() ? url->host : row.url);
                impl->store_or_log(impl->store->erase(row.message_id, row.url));
                continue;
            }
            resumed.push_back(std::make_shared<Delivery>(Delivery{std::move(row), std::move(url).value()}));
        }
    }
    impl->num_pending = resumed.size();
    Impl* raw = impl.get();
    asio::post(raw->io, [raw, resumed = std::move(resumed)] {
        for (const auto& d : resumed) raw->add(d, /*is_new=*/false);
    });
    raw->worker = std::thread([raw] { raw->io.run(); });
    return std::unique_ptr<WebhookSender>(new WebhookSender(std::move(impl)));
}

Result<std::string> WebhookSender::enqueue(std::string_view event_type, std::string_view data_json) {
    return impl_->enqueue_to_urls(impl_->config.target_urls, event_type, data_json);
}

Result<std::string> WebhookSender::enqueue_to(std::string_view url_text, std::string_view event_type,
                                              std::string_view data_json) {
    auto url = parse_url(url_text);
    if (!url.ok()) return url.status();
    if (!impl_->allow.allows(url->host)) {
        logger().warn("webhook target host '{}' is not in --webhook-allow; refused, not contacted", url->host);
        return invalid_argument("webhook target host '" + url->host + "' is not in --webhook-allow");
    }
    return impl_->enqueue_to_urls({std::string(url_text)}, event_type, data_json);
}

Result<std::string> WebhookSender::enqueue_fixed(const FixedEvent& event, std::function<void()> on_stored) {
    if (impl_->config.target_urls.empty()) return invalid_argument("no webhook target configured (--webhook-url)");
    auto body = make_payload(event.event_type, event.data_json, event.created_at_ms, event.event_id);
    if (!body.ok()) return body.status();
    return impl_->enqueue_message(impl_->config.target_urls, event.event_type, event.message_id, *body,
                                  std::move(on_stored));
}

size_t WebhookSender::num_pending() const { return impl_->num_pending.load(); }

}  // namespace hichat::api::webhooks
