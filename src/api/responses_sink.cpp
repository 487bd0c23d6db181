#include "api/responses_sink.h"

#include "api/generation_sink.h"

namespace hichat::api {

ResponsesSink::ResponsesSink(std::shared_ptr<ResponseWriter> writer, ResponseState state, bool stream,
                             PersistTurn persist, ResponsesSinkContext context, AccessRecord record, QuotaLease lease)
    : writer_(std::move(writer)),
      state_(std::move(state)),
      stream_(stream),
      persist_(std::move(persist)),
      context_(context),
      record_(std::move(record)),
      lease_(std::move(lease)) {}

void ResponsesSink::on_event(engine::TokenEvent event) {
    if (!started_ && context_.on_first_event) context_.on_first_event();
    started_ = true;
    output_ids_.insert(output_ids_.end(), event.token_ids.begin(), event.token_ids.end());
    state_.text += event.text;
    if (event.num_cached_tokens > 0) state_.num_cached_tokens = event.num_cached_tokens;
    if (stream_) {
        if (!writer_->response_started()) start_stream();
        if (!event.text.empty()) writer_->write(events_.text_delta(state_, event.text));
    }
    if (event.finish != engine::FinishReason::kNone) finish(event);
}

void ResponsesSink::start_stream() {
    writer_->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Request-Id", state_.id}});
    std::string head = events_.created(state_);
    writer_->write(head + events_.item_started(state_));
}

void ResponsesSink::finish(const engine::TokenEvent& event) {
    account(event);
    if (auto error = finish_error(event.finish)) return fail(*error);
    state_.num_input_tokens = event.num_prompt_tokens;
    state_.num_output_tokens = event.num_generated_tokens;
    state_.output_done = true;
    state_.status = event.finish == engine::FinishReason::kStop ? "completed" : "incomplete";
    if (event.finish == engine::FinishReason::kLength) state_.incomplete_reason = "max_output_tokens";
    if (event.finish == engine::FinishReason::kContentFilter) state_.incomplete_reason = "content_filter";
    if (persist_ && context_.persist_worker != nullptr) {
        // The engine thread is done with this sink: from here on only the worker touches it.
        context_.persist_worker->post([self = shared_from_this()] { self->persist_and_answer(); });
        return;
    }
    persist_and_answer();
}

void ResponsesSink::persist_and_answer() {
    if (persist_) {
        if (auto error = persist_(state_, output_ids_)) return fail(*error);
    }
    if (stream_) {
        writer_->write(events_.finished(state_));
        writer_->finish();
    } else {
        writer_->send(200, "application/json",
                      response_json(state_).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                      {{"X-Request-Id", state_.id}});
    }
}

void ResponsesSink::fail(const ApiError& e) {
    if (context_.on_failed) context_.on_failed(e);
    if (stream_ && writer_->response_started()) {
        writer_->write(events_.error(e));
        writer_->finish();
    } else {
        writer_->send(e.http_status, "application/json", e.to_json(), {{"X-Request-Id", state_.id}});
    }
}

// Metrics, the access-log annotation and the quota's token count, as for chat completions.
void ResponsesSink::account(const engine::TokenEvent& event) {
    const auto error = finish_error(event.finish);
    record_.num_tokens_prompt = event.num_prompt_tokens;
    record_.num_tokens_completion = event.num_generated_tokens;
    if (event.num_generated_tokens > 0) record_.ttft_ms = event.ttft_ms;
    record_.finish_reason = error ? error->code : finish_reason_text(event.finish);
    writer_->annotate(record_);
    account_finished_request({context_.metrics, context_.quotas}, event, arrival_, record_.key_id, lease_);
}

}  // namespace hichat::api
