#include "api/batch_runner.h"

#include <atomic>
#include <chrono>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "api/http/response_sink.h"

namespace hichat::api {
namespace {

using session::BatchStatus;

spdlog::logger& logger() {
    static const auto log = std::make_shared<spdlog::logger>("batch", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    return *log;
}

constexpr auto kRefreshInterval = std::chrono::seconds(5);  // the store is read again at least this often

std::string errors_object(const std::string& code, const std::string& message) {
    nlohmann::json errors = {{"object", "list"},
                             {"data", {{{"code", code}, {"message", message}, {"param", nullptr}, {"line", nullptr}}}}};
    return errors.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The batch id without its "batch_" prefix: the file ids derived from it stay file ids.
std::string id_suffix(const std::string& batch_id) {
    const size_t cut = batch_id.find('_');
    return cut == std::string::npos ? batch_id : batch_id.substr(cut + 1);
}

}  // namespace

std::string_view batch_event_type(BatchStatus status) {
    switch (status) {
        case BatchStatus::kCompleted: return "batch.completed";
        case BatchStatus::kFailed: return "batch.failed";
        case BatchStatus::kCancelled: return "batch.cancelled";
        case BatchStatus::kExpired: return "batch.expired";
        default: return "";
    }
}

struct BatchRunner::Inbox {
    std::mutex mu;
    std::condition_variable wake;
    std::deque<Answer> answers;   // guarded by mu
    bool notified = true;         // guarded by mu; the first round reads the store
    bool stopping = false;        // guarded by mu

    void push(Answer a) {
        {
            std::lock_guard lock(mu);
            answers.push_back(std::move(a));
        }
        wake.notify_one();
    }
};

// Called by the line's ResponseWriter (the engine thread, or the runner's own thread for a refusal).
struct BatchRunner::LineSink final : ResponseSink {
    LineSink(std::shared_ptr<Inbox> inbox, std::string batch_id, int64_t line)
        : inbox_(std::move(inbox)), batch_id_(std::move(batch_id)), line_(line) {}

    void deliver(ResponsePart part) override {
        if (part.kind == ResponsePart::Kind::kChunk || part.kind == ResponsePart::Kind::kStreamEnd) return;
        if (answered_.exchange(true)) return;
        Answer a{.batch_id = batch_id_, .line = line_};
        if (part.kind == ResponsePart::Kind::kFull) {
            a.status = part.status;
            a.body = std::move(part.data);
        } else if (part.kind == ResponsePart::Kind::kStreamHead) {  // lines with stream: true are refused
            a.status = 500;
            a.body = R"({"error":{"message":"a batch line was answered as a stream","type":"server_error"}})";
        }
        inbox_->push(std::move(a));
    }

private:
    std::shared_ptr<Inbox> inbox_;
    std::string batch_id_;
    int64_t line_;
    std::atomic<bool> answered_{false};
};

BatchRunner::BatchRunner(BatchRunnerConfig config, session::BatchStore& store, const session::FileFolder& folder,
                         BatchLineSubmitter submit)
    : config_(std::move(config)), store_(store), folder_(folder), submit_(std::move(submit)),
      inbox_(std::make_shared<Inbox>()) {}

BatchRunner::~BatchRunner() { stop(); }

std::string BatchRunner::output_file_id(const std::string& batch_id) { return "file-batch-output-" + id_suffix(batch_id); }
std::string BatchRunner::error_file_id(const std::string& batch_id) { return "file-batch-errors-" + id_suffix(batch_id); }

void BatchRunner::start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
}

void BatchRunner::notify() {
    {
        std::lock_guard lock(inbox_->mu);
        inbox_->notified = true;
    }
    inbox_->wake.notify_one();
}

void BatchRunner::stop() {
    {
        std::lock_guard lock(inbox_->mu);
        inbox_->stopping = true;
    }
    inbox_->wake.notify_one();
    if (thread_.joinable()) thread_.join();
}

int64_t BatchRunner::now() const {
    if (config_.now_s) return config_.now_s();
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void BatchRunner::loop() {
    auto next_refresh = std::chrono::steady_clock::now();
    for (;;) {
        std::deque<Answer> answers;
        bool refresh_now = false;
        {
            std::unique_lock lock(inbox_->mu);
            auto wake_at = std::chrono::steady_clock::now() + std::chrono::seconds(1);  // expiry checks
            if (retry_at_ > std::chrono::steady_clock::now()) wake_at = std::min(wake_at, retry_at_);
            inbox_->wake.wait_until(lock, wake_at, [&] {
                return inbox_->stopping || inbox_->notified || !inbox_->answers.empty();
            });
            if (inbox_->stopping) break;
            answers.swap(inbox_->answers);
            refresh_now = std::exchange(inbox_->notified, false);
        }
        for (Answer& a : answers) on_answer(std::move(a));
        if (refresh_now || std::chrono::steady_clock::now() >= next_refresh) {
            refresh();
            next_refresh = std::chrono::steady_clock::now() + kRefreshInterval;
        }
        for (auto& a : active_) {
            if (a->feeding && a->stored.expires_at > 0 && now() >= a->stored.expires_at) {
                a->end_status = BatchStatus::kExpired;
                stop_feeding(*a);
            }
        }
        dispatch();
        finish_done_batches();
    }
    for (auto& a : active_) stop_feeding(*a);  // not recorded: they run again after a restart
}

void BatchRunner::refresh() {
    auto unfinished = store_.unfinished_batches();
    if (!unfinished.ok()) {
        logger().error("batch runner: cannot read the batches: {}", unfinished.status().message());
        return;
    }
    for (const session::StoredBatch& b : *unfinished) {
        ActiveBatch* a = nullptr;
        for (auto& candidate : active_) {
            if (candidate->stored.id == b.id) a = candidate.get();
        }
        if (a == nullptr) {
            take_up(b);
        } else if (b.status == BatchStatus::kCancelling && a->stored.status != BatchStatus::kCancelling) {
            a->stored.status = BatchStatus::kCancelling;
            stop_feeding(*a);
        }
    }
}

void BatchRunner::take_up(const session::StoredBatch& b) {
    auto a = std::make_unique<ActiveBatch>();
    a->stored = b;
    const std::optional<Endpoint> endpoint = batch_endpoint(b.endpoint);
    a->endpoint = endpoint.value_or(Endpoint::kChatCompletions);
    if (!endpoint) {
        fail(*a, "invalid_endpoint", "endpoint " + b.endpoint + " is not one a batch can run");
    } else if (b.status == BatchStatus::kValidating) {
        if (!validate(*a)) return;  // the store failed: taken up again at the next refresh
    } else if (b.status == BatchStatus::kInProgress) {
        if (!load_lines(*a)) return;
    } else {
        a->feeding = false;  // cancelling or finalizing: nothing more runs
    }
    active_.push_back(std::move(a));
}

bool BatchRunner::validate(ActiveBatch& a) {
    const std::string& id = a.stored.id;
    auto text = folder_.read(a.stored.input_file_id);
    if (!text.ok()) {
        fail(a, "input_file_missing", "the input file " + a.stored.input_file_id + " cannot be read: " +
                                          text.status().message());
        return true;
    }
    BatchInput input = parse_batch_input(*text, a.endpoint);
    if (input.num_lines == 0) {
        fail(a, "empty_file", "the input file " + a.stored.input_file_id + " holds no request lines");
        return true;
    }
    if (input.num_lines > kMaxBatchLines) {
        fail(a, "too_many_requests", "the input file holds " + std::to_string(input.num_lines) +
                                         " requests; a batch holds at most " + std::to_string(kMaxBatchLines));
        return true;
    }
    std::vector<session::BatchLineResult> refused;
    for (const RefusedLine& r : input.refused) {
        refused.push_back({.line = r.line, .ok = false, .result_json = refused_line(r.custom_id, r.code, r.message)});
    }
    auto started = store_.start_batch(id, input.num_lines, refused);
    if (!started.ok()) {
        logger().error("batch {}: cannot start it: {}", id, started.status().message());
        return false;
    }
    if (!*started) {  // cancelled while it was validated
        a.stored.status = BatchStatus::kCancelling;
        a.feeding = false;
        return true;
    }
    a.stored.status = BatchStatus::kInProgress;
    for (BatchRequestLine& r : input.requests) {
        a.pending.push_back(r.line);
        a.lines.emplace(r.line, std::move(r));
    }
    return true;
}

bool BatchRunner::load_lines(ActiveBatch& a) {
    auto finished = store_.finished_lines(a.stored.id);
    if (!finished.ok()) {
        logger().error("batch {}: cannot read its finished lines: {}", a.stored.id, finished.status().message());
        return false;
    }
    auto text = folder_.read(a.stored.input_file_id);
    if (!text.ok()) {
        fail(a, "input_file_missing", "the input file " + a.stored.input_file_id +
                                          " of this unfinished batch cannot be read: " + text.status().message());
        return true;
    }
    BatchInput input = parse_batch_input(*text, a.endpoint);
    size_t next_finished = 0;  // both ascending
    for (BatchRequestLine& r : input.requests) {
        while (next_finished < finished->size() && (*finished)[next_finished] < r.line) ++next_finished;
        if (next_finished < finished->size() && (*finished)[next_finished] == r.line) continue;  // never twice
        a.pending.push_back(r.line);
        a.lines.emplace(r.line, std::move(r));
    }
    logger().info("batch {}: resuming: {} of {} lines left", a.stored.id, a.pending.size(), a.stored.num_requests_total);
    return true;
}

void BatchRunner::fail(ActiveBatch& a, const std::string& code, const std::string& message) {
    a.end_status = BatchStatus::kFailed;
    a.errors_json = errors_object(code, message);
    stop_feeding(a);
}

void BatchRunner::stop_feeding(ActiveBatch& a) {
    a.feeding = false;
    a.pending.clear();
    for (auto& [line, call] : a.in_flight) {
        if (auto w = call.writer.lock()) w->notify_client_gone();  // Engine::cancel of its requests
        --num_in_flight_;
    }
    a.in_flight.clear();
}

void BatchRunner::on_answer(Answer answer) {
    ActiveBatch* a = nullptr;
    for (auto& candidate : active_) {
        if (candidate->stored.id == answer.batch_id) a = candidate.get();
    }
    if (a == nullptr || a->in_flight.erase(answer.line) == 0) return;  // cancelled meanwhile
    --num_in_flight_;
    const auto line = a->lines.find(answer.line);
    if (line == a->lines.end()) return;
    // A full queue or a stopping server is no answer to the line: it goes again later.
    const bool again = answer.status == 429 || answer.status == 503 || answer.status == 499;
    if (again) {
        if (a->feeding) a->pending.push_front(answer.line);
        retry_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.retry_delay_ms);
        return;
    }
    if (answer.status == 0) {
        answer.status = 500;
        answer.body = R"({"error":{"message":"the request ended without an answer","type":"server_error"}})";
    }
    const session::BatchLineResult result{.line = answer.line, .ok = answer.status >= 200 && answer.status < 300,
                                          .result_json = answered_line(line->second.custom_id, answer.status, answer.body)};
    auto recorded = store_.record_result(a->stored.id, result);
    if (!recorded.ok()) {
        logger().error("batch {}: cannot record line {}: {}", a->stored.id, answer.line, recorded.status().message());
        if (a->feeding) a->pending.push_front(answer.line);
        retry_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.retry_delay_ms);
        return;
    }
    a->lines.erase(line);
}

void BatchRunner::dispatch() {
    if (std::chrono::steady_clock::now() < retry_at_) return;
    for (auto& a : active_) {
        while (a->feeding && !a->pending.empty() && num_in_flight_ < config_.max_lines_in_flight) {
            const int64_t line = a->pending.front();
            a->pending.pop_front();
            auto sink = std::make_shared<LineSink>(inbox_, a->stored.id, line);
            auto writer = std::make_shared<ResponseWriter>(sink);
            a->in_flight[line] = InFlight{.sink = sink, .writer = writer};
            ++num_in_flight_;
            submit_(a->endpoint, a->lines.at(line).body, a->stored.owner, std::move(writer));
        }
    }
}

void BatchRunner::finish_done_batches() {
    for (auto it = active_.begin(); it != active_.end();) {
        ActiveBatch& a = **it;
        const bool done = a.in_flight.empty() && (a.pending.empty() || !a.feeding);
        if (!done || !finish(a)) {
            ++it;
            continue;
        }
        const std::string id = a.stored.id;
        it = active_.erase(it);
        report_finished(id);
    }
}

// Output and error files in input order from the recorded lines, then the final state with its owed
// webhook event (one transaction).
bool BatchRunner::finish(ActiveBatch& a) {
    const std::string& id = a.stored.id;
    BatchStatus end = a.stored.status == BatchStatus::kCancelling ? BatchStatus::kCancelled : a.end_status;
    if (end == BatchStatus::kExpired) {
        for (const auto& [line, request] : a.lines) {
            auto r = store_.record_result(id, {.line = line, .ok = false,
                                               .result_json = refused_line(request.custom_id, "batch_expired",
                                                                           "the batch expired before this request ran")});
            if (!r.ok()) return false;
        }
        a.lines.clear();
    }
    if (end == BatchStatus::kCompleted && a.stored.status == BatchStatus::kInProgress) {
        (void)store_.advance(id, BatchStatus::kInProgress, BatchStatus::kFinalizing);
    }
    auto results = store_.results(id);
    if (!results.ok()) return false;
    std::string output, errors;
    for (const session::BatchLineResult& r : *results) (r.ok ? output : errors) += r.result_json + "\n";
    session::BatchEnd e{.status = end, .errors_json = a.errors_json};
    if (config_.owe_webhooks) {
        e.webhook = session::OwedWebhook{.object_id = id, .event_type = std::string(batch_event_type(end)),
                                         .created_at_ms = now() * 1000};
    }
    auto add_file = [&](const std::string& file_id, const std::string& bytes, const char* suffix) {
        Status s = folder_.write(file_id, bytes);
        if (!s.ok()) return s;
        e.files.push_back({.id = file_id, .owner = a.stored.owner, .num_bytes = static_cast<int64_t>(bytes.size()),
                           .filename = id + suffix, .purpose = "batch_output"});
        return ok_status();
    };
    Status s;
    if (end != BatchStatus::kFailed || !results->empty()) {
        e.output_file_id = output_file_id(id);
        s = add_file(e.output_file_id, output, "_output.jsonl");
    }
    if (s.ok() && !errors.empty()) {
        e.error_file_id = error_file_id(id);
        s = add_file(e.error_file_id, errors, "_error.jsonl");
    }
    if (s.ok()) s = store_.finish_batch(id, e);
    if (!s.ok()) {
        logger().error("batch {}: cannot finish it: {}", id, s.message());
        return false;
    }
    return true;
}

void BatchRunner::report_finished(const std::string& batch_id) {
    if (!config_.on_batch_finished) return;
    auto b = store_.batch(batch_id);
    if (b.ok() && b->has_value()) config_.on_batch_finished(**b);
}

}  // namespace hichat::api
