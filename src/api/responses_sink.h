// ResponsesSink: one /v1/responses request's engine events -> the Responses SSE events or one response
// object; at the end it hands the finished turn to `persist` (the store write) before the client sees
// the final event, so that a next turn sent right after it finds the stored response.
// Events arrive on the engine thread (TokenSink contract); `persist` and the final answer run on the
// context's `persist_worker` (the disk is never waited for on the engine thread), or inline without one.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "api/http/response_writer.h"
#include "api/policy/quota_lease.h"
#include "api/policy/quota_limiter.h"
#include "api/response_object.h"
#include "api/serial_worker.h"
#include "api/telemetry/access_record.h"
#include "api/telemetry/metrics.h"
#include "engine/request.h"

namespace hichat::api {

// The finished turn; the returned error (e.g. the store failed) replaces the answer.
using PersistTurn = std::function<std::optional<ApiError>(const ResponseState& state, const std::vector<int32_t>& output_ids)>;

struct ResponsesSinkContext {
    Metrics* metrics = nullptr;       // may be null
    QuotaLimiter* quotas = nullptr;   // may be null
    SerialWorker* persist_worker = nullptr;  // null: persist on the engine thread (tests)
    // A background response's: at its first event (engine thread), and when it ends with an error
    // (engine thread, or the persist worker when the store failed). Both must not block. May be empty.
    std::function<void()> on_first_event;
    std::function<void(const ApiError& e)> on_failed;
};

class ResponsesSink final : public engine::TokenSink, public std::enable_shared_from_this<ResponsesSink> {
public:
    ResponsesSink(std::shared_ptr<ResponseWriter> writer, ResponseState state, bool stream, PersistTurn persist,
                  ResponsesSinkContext context, AccessRecord record, QuotaLease lease);

    void on_event(engine::TokenEvent event) override;

private:
    void start_stream();
    void finish(const engine::TokenEvent& event);
    void persist_and_answer();
    void fail(const ApiError& e);
    void account(const engine::TokenEvent& event);

    std::shared_ptr<ResponseWriter> writer_;
    ResponseState state_;
    bool stream_;
    PersistTurn persist_;
    ResponsesSinkContext context_;
    AccessRecord record_;
    QuotaLease lease_;
    ResponseEvents events_;
    std::vector<int32_t> output_ids_;  // [num_output_tokens] as generated
    bool started_ = false;             // on_first_event was called
    std::chrono::steady_clock::time_point arrival_ = std::chrono::steady_clock::now();
};

}  // namespace hichat::api
