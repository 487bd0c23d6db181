#include "api/generation_sink.h"

namespace hichat::api {
namespace {

Usage usage_of(const engine::TokenEvent& event) {
    return {.prompt_tokens = event.num_prompt_tokens,
            .completion_tokens = event.num_generated_tokens,
            .cached_tokens = event.num_cached_tokens};
}

}  // namespace

std::string finish_reason_text(engine::FinishReason reason) {
    switch (reason) {
        case engine::FinishReason::kStop: return "stop";
        case engine::FinishReason::kLength: return "length";
        case engine::FinishReason::kContentFilter: return "content_filter";
        case engine::FinishReason::kDeadline:
        case engine::FinishReason::kCancelled:
        case engine::FinishReason::kNone: break;
    }
    return "";
}

// 504 rather than 408: a 408 tells the client that it was too slow sending its request (HiChat's HTTP
// layer answers the header and body timeouts so), while here the request arrived whole and the server
// did not finish the generation in the time it allows; 504 is the status of "the part behind the
// HTTP front end did not answer in time", as proxies in front of inference servers report it.
std::optional<ApiError> finish_error(engine::FinishReason reason) {
    if (reason == engine::FinishReason::kDeadline) {
        return ApiError{.http_status = 504,
                        .message = "the request did not finish within the server's request timeout "
                                   "(--request-timeout-s)",
                        .type = "server_error",
                        .code = "request_timeout"};
    }
    if (reason == engine::FinishReason::kCancelled) {
        return ApiError{.http_status = 503,
                        .message = "the request was cancelled before it finished: the server is shutting down",
                        .type = "server_error",
                        .code = "server_shutting_down"};
    }
    return std::nullopt;
}

GenerationSink::GenerationSink(std::shared_ptr<ResponseWriter> writer, ResponseIds ids, bool stream,
                               bool include_usage, SinkContext context, AccessRecord record, QuotaLease lease,
                               std::optional<LogprobsJson> logprobs)
    : writer_(std::move(writer)),
      ids_(std::move(ids)),
      stream_(stream),
      include_usage_(include_usage),
      context_(context),
      record_(std::move(record)),
      lease_(std::move(lease)),
      arrival_(std::chrono::steady_clock::now()),
      logprobs_(std::move(logprobs)) {
    if (stream_) delta_format_ = delta_chunk_format(ids_);
    if (logprobs_) logprobs_body_ = empty_logprobs();
}

nlohmann::ordered_json GenerationSink::empty_logprobs() const {
    return ids_.endpoint == Endpoint::kChatCompletions ? LogprobsJson::empty_chat() : LogprobsJson::empty_completion();
}

void GenerationSink::append_logprobs(const engine::TokenEvent& event, nlohmann::ordered_json& out) {
    if (ids_.endpoint == Endpoint::kChatCompletions) {
        logprobs_->append_chat(event.token_ids, event.logprobs, out["content"]);
    } else {
        logprobs_->append_completion(event.token_ids, event.logprobs, text_offset_, out);
    }
}

void GenerationSink::on_event(engine::TokenEvent event) {
    if (!event.token_ids.empty()) observe_token_timing();
    const bool last = event.finish != engine::FinishReason::kNone;
    const std::optional<ApiError> error = last ? finish_error(event.finish) : std::nullopt;
    if (last) annotate_access(event, error);  // before the response ends
    if (stream_) {
        write_stream(event, error);
    } else {
        text_ += event.text;
        if (logprobs_) append_logprobs(event, logprobs_body_);
    }
    if (last) finish(event, error);
}

void GenerationSink::observe_token_timing() {
    const auto now = std::chrono::steady_clock::now();
    if (context_.metrics != nullptr && last_token_time_) {
        context_.metrics->observe_inter_token_latency(std::chrono::duration<double>(now - *last_token_time_).count());
    }
    last_token_time_ = now;
}

// One chunk per generated token (its text may be empty while a character or a possible stop string
// is held back), so that clients can measure inter-token latency. An error ends the stream with an
// error event in place of the finish and usage chunks.
void GenerationSink::write_stream(const engine::TokenEvent& event, const std::optional<ApiError>& error) {
    // The stream starts with the engine's first event, so that a request the engine refuses (queue
    // full, shutting down) still gets its HTTP error status.
    if (!writer_->response_started()) {
        writer_->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Request-Id", ids_.id}});
    }
    if (logprobs_ && !event.token_ids.empty()) {  // the slow path: the whole chunk built as JSON
        nlohmann::ordered_json lp = empty_logprobs();
        append_logprobs(event, lp);
        writer_->write(delta_chunk_with_logprobs(ids_, event.text, first_chunk_, lp));
        first_chunk_ = false;
    } else if (!event.token_ids.empty() || !event.text.empty()) {
        writer_->write(delta_chunk(delta_format_, event.text, first_chunk_));
        first_chunk_ = false;
    }
    if (event.finish == engine::FinishReason::kNone) return;
    if (error) {
        writer_->write(error_chunk(*error));
    } else {
        writer_->write(finish_chunk(ids_, finish_reason_text(event.finish)));
        if (include_usage_) writer_->write(usage_chunk(ids_, usage_of(event)));
    }
    writer_->write(kDoneChunk);
    writer_->finish();
}

// The access log (its status is the one the HTTP layer sent: 200 for a streamed error) gets, for an
// error, its code in place of the finish reason.
void GenerationSink::annotate_access(const engine::TokenEvent& event, const std::optional<ApiError>& error) {
    record_.num_tokens_prompt = event.num_prompt_tokens;
    record_.num_tokens_completion = event.num_generated_tokens;
    if (event.num_generated_tokens > 0) record_.ttft_ms = event.ttft_ms;
    record_.finish_reason = error ? error->code : finish_reason_text(event.finish);
    writer_->annotate(record_);
}

void GenerationSink::finish(const engine::TokenEvent& event, const std::optional<ApiError>& error) {
    const std::string reason = error ? error->code : finish_reason_text(event.finish);
    const int status = error && !stream_ ? error->http_status : 200;
    if (!stream_ && error) {
        writer_->send(status, "application/json", error->to_json(), {{"X-Request-Id", ids_.id}});
    } else if (!stream_) {
        writer_->send(200, "application/json",
                      completion_body(ids_, text_, reason, usage_of(event), logprobs_ ? &logprobs_body_ : nullptr),
                      {{"X-Request-Id", ids_.id}});
    }
    account_finished_request(context_, event, arrival_, record_.key_id, lease_);
}

void account_finished_request(const SinkContext& context, const engine::TokenEvent& final_event,
                              std::chrono::steady_clock::time_point arrival, const std::optional<KeyId>& key,
                              QuotaLease& lease) {
    const auto now = std::chrono::steady_clock::now();
    const engine::TokenEvent& e = final_event;
    if (context.metrics != nullptr) {
        if (e.num_generated_tokens > 0) context.metrics->observe_time_to_first_token(e.ttft_ms / 1e3);
        context.metrics->observe_e2e_latency(std::chrono::duration<double>(now - arrival).count());
        context.metrics->observe_request_tokens(e.num_prompt_tokens, e.num_generated_tokens);
    }
    if (context.quotas != nullptr && key) {
        context.quotas->record_tokens(*key, e.num_prompt_tokens + e.num_generated_tokens, now);
    }
    lease.reset();
}

}  // namespace hichat::api
