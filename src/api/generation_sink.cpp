#include "api/generation_sink.h"

namespace hichat::api {

std::string finish_reason_text(engine::FinishReason reason) {
    switch (reason) {
        case engine::FinishReason::kStop: return "stop";
        case engine::FinishReason::kLength: return "length";
        case engine::FinishReason::kContentFilter: return "content_filter";
        case engine::FinishReason::kDeadline: return "deadline";
        case engine::FinishReason::kCancelled: return "cancelled";
        case engine::FinishReason::kNone: break;
    }
    return "";
}

GenerationSink::GenerationSink(std::shared_ptr<ResponseWriter> writer, ResponseIds ids, bool stream,
                               bool include_usage, SinkContext context, AccessRecord record, QuotaLease lease)
    : writer_(std::move(writer)),
      ids_(std::move(ids)),
      stream_(stream),
      include_usage_(include_usage),
      context_(context),
      record_(std::move(record)),
      lease_(std::move(lease)),
      arrival_(std::chrono::steady_clock::now()) {
    if (stream_) {
        delta_format_ = delta_chunk_format(ids_);
        writer_->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Request-Id", ids_.id}});
    }
}

void GenerationSink::on_event(engine::TokenEvent event) {
    if (!event.token_ids.empty()) observe_token_timing();
    if (event.finish != engine::FinishReason::kNone) annotate_access(event);  // before the response ends
    if (stream_) {
        write_stream(event);
    } else {
        text_ += event.text;
    }
    if (event.finish != engine::FinishReason::kNone) finish(event);
}

void GenerationSink::observe_token_timing() {
    const auto now = std::chrono::steady_clock::now();
    if (context_.metrics != nullptr && last_token_time_) {
        context_.metrics->observe_inter_token_latency(std::chrono::duration<double>(now - *last_token_time_).count());
    }
    last_token_time_ = now;
}

// One chunk per generated token (its text may be empty while a character or a possible stop string
// is held back), so that clients can measure inter-token latency.
void GenerationSink::write_stream(const engine::TokenEvent& event) {
    if (!event.token_ids.empty() || !event.text.empty()) {
        writer_->write(delta_chunk(delta_format_, event.text, first_chunk_));
        first_chunk_ = false;
    }
    if (event.finish == engine::FinishReason::kNone) return;
    writer_->write(finish_chunk(ids_, finish_reason_text(event.finish)));
    if (include_usage_) writer_->write(usage_chunk(ids_, {event.num_prompt_tokens, event.num_generated_tokens}));
    writer_->write(kDoneChunk);
    writer_->finish();
}

void GenerationSink::annotate_access(const engine::TokenEvent& event) {
    record_.num_tokens_prompt = event.num_prompt_tokens;
    record_.num_tokens_completion = event.num_generated_tokens;
    if (event.num_generated_tokens > 0) record_.ttft_ms = event.ttft_ms;
    record_.finish_reason = finish_reason_text(event.finish);
    writer_->annotate(record_);
}

void GenerationSink::finish(const engine::TokenEvent& event) {
    const auto now = std::chrono::steady_clock::now();
    const std::string reason = finish_reason_text(event.finish);
    if (!stream_) {
        writer_->send(200, "application/json",
                      completion_body(ids_, text_, reason, {event.num_prompt_tokens, event.num_generated_tokens}),
                      {{"X-Request-Id", ids_.id}});
    }
    if (context_.metrics != nullptr) {
        if (event.num_generated_tokens > 0) context_.metrics->observe_time_to_first_token(event.ttft_ms / 1e3);
        context_.metrics->observe_e2e_latency(std::chrono::duration<double>(now - arrival_).count());
        context_.metrics->observe_request_tokens(event.num_prompt_tokens, event.num_generated_tokens);
    }
    if (context_.quotas != nullptr && record_.key_id) {
        context_.quotas->record_tokens(*record_.key_id, event.num_prompt_tokens + event.num_generated_tokens, now);
    }
    lease_.reset();
}

}  // namespace hichat::api
