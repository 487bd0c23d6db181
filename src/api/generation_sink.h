// GenerationSink: carries one request's engine events to its HTTP response: SSE chunks as tokens
// arrive, or one JSON body at the end; then metrics, the access-log annotation of the response (the
// HTTP server's exchange observer writes the line) and the quota release.
// Called on the engine thread only (TokenSink contract); never blocks (ResponseWriter queues bytes).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "api/logprobs_json.h"
#include "api/telemetry/access_record.h"
#include "api/telemetry/metrics.h"
#include "api/policy/quota_lease.h"
#include "api/policy/quota_limiter.h"
#include "api/http/response_writer.h"
#include "api/openai_response.h"
#include "engine/request.h"

namespace hichat::api {

struct SinkContext {
    Metrics* metrics = nullptr;        // may be null
    QuotaLimiter* quotas = nullptr;    // may be null
};

// A finished request's latencies and token counts into the metrics, its tokens into the key's quota
// (when it has one), then the lease goes (the key's concurrency slot is free). Shared by every sink.
void account_finished_request(const SinkContext& context, const engine::TokenEvent& final_event,
                              std::chrono::steady_clock::time_point arrival, const std::optional<KeyId>& key,
                              QuotaLease& lease);

class GenerationSink final : public engine::TokenSink {
public:
    // `logprobs`: set when the request asked for them (each token event then carries its entries).
    GenerationSink(std::shared_ptr<ResponseWriter> writer, ResponseIds ids, bool stream, bool include_usage,
                   SinkContext context, AccessRecord record, QuotaLease lease,
                   std::optional<LogprobsJson> logprobs = std::nullopt);

    void on_event(engine::TokenEvent event) override;

private:
    void write_stream(const engine::TokenEvent& event, const std::optional<ApiError>& error);
    void annotate_access(const engine::TokenEvent& event, const std::optional<ApiError>& error);  // on the writer
    void finish(const engine::TokenEvent& event, const std::optional<ApiError>& error);
    void observe_token_timing();
    // Appends the event's token entries to `out` (the endpoint's logprobs object).
    void append_logprobs(const engine::TokenEvent& event, nlohmann::ordered_json& out);
    nlohmann::ordered_json empty_logprobs() const;

    std::shared_ptr<ResponseWriter> writer_;
    ResponseIds ids_;
    DeltaChunkFormat delta_format_;  // streamed responses
    bool stream_, include_usage_;
    SinkContext context_;
    AccessRecord record_;
    QuotaLease lease_;
    std::chrono::steady_clock::time_point arrival_;
    std::optional<std::chrono::steady_clock::time_point> last_token_time_;
    bool first_chunk_ = true;
    std::string text_;  // non-streamed responses
    std::optional<LogprobsJson> logprobs_;
    nlohmann::ordered_json logprobs_body_;   // non-streamed responses: every token's entries
    int64_t text_offset_ = 0;                // completions: code points of the tokens so far
};

// The OpenAI finish_reason ("stop", "length", "content_filter") of a request the engine finished; empty
// for the two ends that are not OpenAI finish reasons, kDeadline and kCancelled, which finish_error
// turns into an error instead.
std::string finish_reason_text(engine::FinishReason reason);

// The error a request gets when the engine ends it without an answer: past its deadline
// (--request-timeout-s): 504 "request_timeout"; cancelled by the server's shutdown: 503. nullopt for
// the OpenAI finish reasons. A non-streamed request gets it as its HTTP response; a streamed one (its
// 200 is already sent) as a last `data: {"error": ...}` event before `data: [DONE]`.
std::optional<ApiError> finish_error(engine::FinishReason reason);

}  // namespace hichat::api
