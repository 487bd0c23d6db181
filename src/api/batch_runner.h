// BatchRunner: runs the stored batches' lines through the engine and finishes each batch into its
// output and error files.
//
// Lines go in a few at a time (max_lines_in_flight over all batches, oldest batch first) at
// kBatchLinePriority, through the same path as an HTTP request to the batch's endpoint (the submitter),
// so the engine serves them on the capacity interactive requests leave. A line is finished once its
// answer is committed to the BatchStore (record_result), never before; a line whose answer was not
// committed (the server stopped or was killed) runs again on the next start, and a committed one never
// does. At start every unfinished batch is taken up again: validating ones are validated, in_progress
// ones resume with the lines not yet recorded, cancelling and finalizing ones are finished.
//
// Cancel: the API moves the batch to cancelling and calls notify(); the runner cancels its lines in
// the engine, feeds no more, and finishes it as cancelled with the lines finished so far. A batch past
// its expires_at is finished as expired, its unfinished lines in the error file (code batch_expired).
//
// Ownership: owned by OpenAiService; the store, the folder and what the submitter reaches must outlive
// stop(). Threads: one thread of its own runs everything (store writes included: the engine thread never
// waits on them); notify() from any thread; start() and stop() from one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/batch_lines.h"
#include "api/http/response_sink.h"
#include "api/http/response_writer.h"
#include "session/batch_store.h"
#include "session/file_folder.h"

namespace hichat::api {

// Runs one line's request as if it came to `endpoint` over HTTP from `owner` (an API key's id; "" without
// keys): parse, validate, tokenize, Engine::submit; the answer (one non-streamed response) goes to
// `writer`, from the calling thread (refusals) or the engine thread.
using BatchLineSubmitter =
    std::function<void(Endpoint endpoint, std::string body, const std::string& owner, std::shared_ptr<ResponseWriter> writer)>;

struct BatchRunnerConfig {
    int max_lines_in_flight = 4;          // lines submitted and not yet answered, over all batches; >= 1
    int retry_delay_ms = 500;             // after a line was refused for a full queue (429) or a 503
    std::function<int64_t()> now_s;       // unix seconds; null: the system clock (tests inject one)
    // The one hook for "a batch finished" (completed, failed, cancelled or expired): called on the
    // runner's thread once the final state is committed, with the batch as stored. May be empty.
    std::function<void(const session::StoredBatch& batch)> on_batch_finished;
    // Webhooks on: the batch's event (batch_event_type) is committed as owed with its final state, for
    // the webhook outbox to hand over (api/webhooks/webhook_outbox.h), also after a kill.
    bool owe_webhooks = false;
};

// OpenAI's webhook event type of a batch's final state ("batch.completed", "batch.failed",
// "batch.cancelled", "batch.expired"); "" for a state that is not final.
std::string_view batch_event_type(session::BatchStatus status);

class BatchRunner {
public:
    BatchRunner(BatchRunnerConfig config, session::BatchStore& store, const session::FileFolder& folder,
                BatchLineSubmitter submit);
    ~BatchRunner();  // stop()
    BatchRunner(const BatchRunner&) = delete;
    BatchRunner& operator=(const BatchRunner&) = delete;

    void start();    // takes up the stored unfinished batches
    void notify();   // a batch was created or moved to cancelling: look at the store again
    // Cancels the lines in flight (they stay unrecorded and run again after a restart), then joins.
    // Idempotent.
    void stop();

    // Output and error files' ids of a batch (fixed, so that finishing again after a crash overwrites).
    static std::string output_file_id(const std::string& batch_id);
    static std::string error_file_id(const std::string& batch_id);

private:
    struct Inbox;      // answers from the engine thread and the submitter, notifications
    struct LineSink;   // a line's ResponseSink: hands its answer to the inbox
    struct Answer {
        std::string batch_id;
        int64_t line = 0;
        int status = 0;                   // 0: the writer was dropped without an answer
        std::string body;
    };
    struct InFlight {
        std::shared_ptr<ResponseSink> sink;     // the writer's sink: answers stop once this goes
        std::weak_ptr<ResponseWriter> writer;   // held by the request's path; cancels it
    };
    struct ActiveBatch {
        session::StoredBatch stored;      // as last read (status kept current by the runner)
        Endpoint endpoint = Endpoint::kChatCompletions;
        std::map<int64_t, BatchRequestLine> lines;  // not yet recorded, by line
        std::deque<int64_t> pending;                // not yet submitted (or to submit again)
        std::map<int64_t, InFlight> in_flight;      // submitted, not answered
        bool feeding = true;              // false once cancelling, expired or failed
        session::BatchStatus end_status = session::BatchStatus::kCompleted;  // unless cancelled
        std::string errors_json;          // the batch's errors when it failed
    };

    void loop();
    void refresh();                       // unfinished batches from the store
    void take_up(const session::StoredBatch& b);
    bool validate(ActiveBatch& a);        // validating -> in_progress (or failed); false: dropped
    bool load_lines(ActiveBatch& a);      // the lines not yet recorded; false: failed
    void stop_feeding(ActiveBatch& a);    // cancels the lines in flight
    void on_answer(Answer answer);
    void dispatch();
    void finish_done_batches();
    bool finish(ActiveBatch& a);          // false: retry later
    void fail(ActiveBatch& a, const std::string& code, const std::string& message);
    void report_finished(const std::string& batch_id);
    int64_t now() const;

    BatchRunnerConfig config_;
    session::BatchStore& store_;
    const session::FileFolder& folder_;
    BatchLineSubmitter submit_;
    std::shared_ptr<Inbox> inbox_;
    std::thread thread_;

    // Runner thread only.
    std::vector<std::unique_ptr<ActiveBatch>> active_;  // oldest first
    int num_in_flight_ = 0;
    std::chrono::steady_clock::time_point retry_at_{};  // no submission before it
};

}  // namespace hichat::api
