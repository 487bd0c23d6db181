// GenerationSink: carries one API request's engine events to its HTTP response: SSE chunks as tokens
// arrive, or one JSON body at the end; then metrics, the access-log annotation of the response (the
// HTTP server's exchange observer writes the line) and the quota release.
//
// A request with n choices runs as n engine requests (children). Each child reports to its
// choice_sink(i), and this sink merges them: streamed, chunks interleave, one choice per chunk with its
// index, each choice its own finish chunk, then after the last choice the usage chunk
// (include_usage) and one [DONE]; non-streamed, one body with choices[i] in index order. The request
// is accounted once, when every child has ended: prompt tokens once, completion tokens summed over
// the choices. An error end of any child (deadline, shutdown) ends the whole response as a single
// request's error does, and the other children are cancelled (set_cancel_children).
//
// Called on the engine thread only (TokenSink contract: every child's events come from the one engine
// thread, so the mutex that guards the merged state is uncontended); never blocks (ResponseWriter
// queues bytes).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/logprobs_json.h"
#include "api/telemetry/access_record.h"
#include "api/telemetry/metrics.h"
#include "api/policy/quota_lease.h"
#include "api/policy/quota_limiter.h"
#include "api/http/response_writer.h"
#include "api/openai_response.h"
#include "api/tool_calls.h"
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

// A chat request with active tools: each choice's reply is read for calls in the model's format.
struct ToolOutput {
    ToolFormat format = ToolFormat::kNone;
    std::vector<std::string> names;
    bool parallel = true;
};

class GenerationSink final : public engine::TokenSink, public std::enable_shared_from_this<GenerationSink> {
public:
    GenerationSink(std::shared_ptr<ResponseWriter> writer, ResponseIds ids, bool stream, bool include_usage,
                   SinkContext context, AccessRecord record, QuotaLease lease, int num_choices = 1,
                   std::optional<LogprobsJson> logprobs = std::nullopt,
                   std::optional<ToolOutput> tools = std::nullopt);

    // The events of choice 0 (a request with one choice can take this sink as its TokenSink).
    void on_event(engine::TokenEvent event) override;
    // The events of choice `index` in [0, num_choices).
    void on_choice_event(int index, engine::TokenEvent event);
    // The TokenSink of child `index` (it holds this sink). The sink must be owned by a shared_ptr.
    std::shared_ptr<engine::TokenSink> choice_sink(int index);
    // Run once, on the engine thread and outside the lock, when a child ends with an error while others
    // still run: it cancels them (Engine::cancel of every child). Set before the children are submitted.
    void set_cancel_children(std::function<void()> cancel) { cancel_children_ = std::move(cancel); }
    // Completions with echo: every choice starts with the prompt's text (and, with logprobs, the prompt's
    // tokens: their logprobs come with each child's first event). Set before the children are submitted.
    struct Echo {
        std::string text;
        std::vector<int32_t> prompt_ids;
    };
    void set_echo(Echo echo) { echo_ = std::move(echo); }

private:
    struct Choice {
        DeltaChunkFormat delta_format;   // streamed responses
        bool first_chunk = true;
        std::string text;                // non-streamed responses
        std::string finish_reason;       // set when it ends with an OpenAI finish reason
        bool ended = false;
        int num_generated_tokens = 0;    // so far
        int num_cached_tokens = 0;       // prompt tokens its admission took from the prefix cache
        double ttft_ms = 0;              // set once it has a token
        std::optional<std::chrono::steady_clock::time_point> last_token_time;
        nlohmann::ordered_json logprobs;  // non-streamed responses with logprobs: every token's entries
        int64_t text_offset = 0;          // completions logprobs: code points of the tokens so far
        std::optional<ToolCallStream> tools;  // requests with tools: splits the reply into content and calls
        std::vector<ToolCall> tool_calls;     // non-streamed: the reply's calls
        bool echoed = false;                  // echo: the prompt is in the choice's text
    };

    // Returns whether the other children must be cancelled (this one ended the response with an error).
    bool merge(int index, const engine::TokenEvent& event);
    void write_delta(int index, const engine::TokenEvent& event);
    // Streamed with tools: the reply parts this event completes, as content and tool-call chunks.
    void write_reply_parts(int index, const engine::TokenEvent& event);
    // Non-streamed with tools, at the choice's end: its text split into content and calls.
    void split_tool_calls(Choice& choice);
    void end_with_error(const ApiError& error);
    void end_normally();
    void annotate_access(const std::optional<ApiError>& error);  // on the writer, before the response ends
    void observe_token_timing(Choice& choice);
    // Appends the event's token entries to `out` (the endpoint's logprobs object).
    void append_logprobs(Choice& choice, const engine::TokenEvent& event, nlohmann::ordered_json& out) const;
    nlohmann::ordered_json empty_logprobs() const;
    // Echo, at a choice's first event: the prompt's text (returned) and its tokens' logprobs (into `lp`
    // when the request asked for logprobs). Empty once the choice has it, or without echo.
    std::string take_echo(Choice& choice, const engine::TokenEvent& event, nlohmann::ordered_json* lp);
    // The whole request's figures as one final event: prompt tokens once, completion tokens summed, the
    // first token of any choice.
    engine::TokenEvent totals() const;
    Usage usage() const;

    std::shared_ptr<ResponseWriter> writer_;
    ResponseIds ids_;
    bool stream_, include_usage_;
    SinkContext context_;
    AccessRecord record_;
    QuotaLease lease_;
    std::chrono::steady_clock::time_point arrival_;
    std::function<void()> cancel_children_;
    std::optional<LogprobsJson> logprobs_;   // set when the request asked for logprobs
    std::optional<Echo> echo_;

    std::mutex mu_;                  // guards everything below
    std::vector<Choice> choices_;    // [num_choices]
    int num_prompt_tokens_ = 0;
    int num_ended_ = 0;
    bool response_ended_ = false;    // the last bytes are queued: by the last choice or an error
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
