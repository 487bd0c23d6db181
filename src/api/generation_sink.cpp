#include "api/generation_sink.h"

#include <algorithm>

#include "base/check.h"

namespace hichat::api {
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

namespace {

// Forwards one child's events to its choice of the merged sink.
class ChoiceSink final : public engine::TokenSink {
public:
    ChoiceSink(std::shared_ptr<GenerationSink> merged, int index) : merged_(std::move(merged)), index_(index) {}
    void on_event(engine::TokenEvent event) override { merged_->on_choice_event(index_, std::move(event)); }

private:
    std::shared_ptr<GenerationSink> merged_;
    int index_;
};

}  // namespace

GenerationSink::GenerationSink(std::shared_ptr<ResponseWriter> writer, ResponseIds ids, bool stream,
                               bool include_usage, SinkContext context, AccessRecord record, QuotaLease lease,
                               int num_choices, std::optional<LogprobsJson> logprobs,
                               std::optional<ToolOutput> tools)
    : writer_(std::move(writer)),
      ids_(std::move(ids)),
      stream_(stream),
      include_usage_(include_usage),
      context_(context),
      record_(std::move(record)),
      lease_(std::move(lease)),
      arrival_(std::chrono::steady_clock::now()),
      logprobs_(std::move(logprobs)),
      choices_(static_cast<size_t>(num_choices)) {
    CHECK_GE(num_choices, 1);
    if (logprobs_) {
        for (Choice& c : choices_) c.logprobs = empty_logprobs();
    }
    if (stream_) {
        for (size_t i = 0; i < choices_.size(); ++i) choices_[i].delta_format = delta_chunk_format(ids_, static_cast<int>(i));
    }
    if (tools) {
        // Call ids from the response id and the choice: unique per response, no shared generator.
        const uint64_t seed = std::hash<std::string>{}(ids_.id);
        for (size_t i = 0; i < choices_.size(); ++i) {
            choices_[i].tools.emplace(tools->format, tools->names, tools->parallel, seed + i);
        }
    }
}

nlohmann::ordered_json GenerationSink::empty_logprobs() const {
    return ids_.endpoint == Endpoint::kChatCompletions ? LogprobsJson::empty_chat() : LogprobsJson::empty_completion();
}

void GenerationSink::append_logprobs(Choice& c, const engine::TokenEvent& event, nlohmann::ordered_json& out) const {
    if (ids_.endpoint == Endpoint::kChatCompletions) {
        logprobs_->append_chat(event.token_ids, event.logprobs, out["content"]);
    } else {
        logprobs_->append_completion(event.token_ids, event.logprobs, c.text_offset, out);
    }
}

std::string GenerationSink::take_echo(Choice& c, const engine::TokenEvent& event, nlohmann::ordered_json* lp) {
    if (!echo_ || c.echoed) return {};
    c.echoed = true;
    if (logprobs_ && lp != nullptr) {
        logprobs_->append_completion_prompt(echo_->prompt_ids, event.prompt_logprobs, echo_->text, c.text_offset, *lp);
    }
    return echo_->text;
}

std::shared_ptr<engine::TokenSink> GenerationSink::choice_sink(int index) {
    CHECK(index >= 0 && static_cast<size_t>(index) < choices_.size()) << "choice " << index;
    return std::make_shared<ChoiceSink>(shared_from_this(), index);
}

void GenerationSink::on_event(engine::TokenEvent event) { on_choice_event(0, std::move(event)); }

void GenerationSink::on_choice_event(int index, engine::TokenEvent event) {
    bool cancel = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        cancel = merge(index, event);
    }
    if (cancel && cancel_children_) cancel_children_();
}

bool GenerationSink::merge(int index, const engine::TokenEvent& event) {
    CHECK(index >= 0 && static_cast<size_t>(index) < choices_.size()) << "choice " << index;
    Choice& c = choices_[static_cast<size_t>(index)];
    CHECK(!c.ended) << "choice " << index << " got an event after its last";
    if (!event.token_ids.empty()) observe_token_timing(c);
    num_prompt_tokens_ = event.num_prompt_tokens;
    c.num_generated_tokens = event.num_generated_tokens;
    if (event.num_generated_tokens > 0) c.ttft_ms = event.ttft_ms;
    if (!response_ended_) {
        if (stream_) {
            write_delta(index, event);
        } else {
            c.text += take_echo(c, event, &c.logprobs);
            c.text += event.text;
            if (logprobs_) append_logprobs(c, event, c.logprobs);
            if (c.tools && event.finish != engine::FinishReason::kNone) split_tool_calls(c);
        }
    }
    if (event.finish == engine::FinishReason::kNone) return false;
    c.ended = true;
    c.num_cached_tokens = event.num_cached_tokens;
    ++num_ended_;
    const bool last = num_ended_ == static_cast<int>(choices_.size());
    bool cancel_others = false;
    if (!response_ended_) {
        if (const std::optional<ApiError> error = finish_error(event.finish)) {
            end_with_error(*error);
            cancel_others = !last;
        } else {
            c.finish_reason = finish_reason_text(event.finish);
            if (c.tools && c.tools->num_calls() > 0 && c.finish_reason == "stop") c.finish_reason = "tool_calls";
            if (stream_) writer_->write(finish_chunk(ids_, c.finish_reason, index));
            if (last) end_normally();
        }
    }
    if (last) account_finished_request(context_, totals(), arrival_, record_.key_id, lease_);
    return cancel_others;
}

void GenerationSink::observe_token_timing(Choice& choice) {
    const auto now = std::chrono::steady_clock::now();
    if (context_.metrics != nullptr && choice.last_token_time) {
        context_.metrics->observe_inter_token_latency(std::chrono::duration<double>(now - *choice.last_token_time).count());
    }
    choice.last_token_time = now;
}

// One chunk per generated token (its text may be empty while a character or a possible stop string
// is held back), so that clients can measure inter-token latency.
void GenerationSink::write_delta(int index, const engine::TokenEvent& event) {
    // The stream starts with the engine's first event, so that a request the engine refuses (queue
    // full, shutting down) still gets its HTTP error status.
    if (!writer_->response_started()) {
        writer_->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Request-Id", ids_.id}});
    }
    Choice& c = choices_[static_cast<size_t>(index)];
    if (c.tools) return write_reply_parts(index, event);
    nlohmann::ordered_json lp = logprobs_ ? empty_logprobs() : nlohmann::ordered_json();
    const bool echoes = echo_ && !c.echoed;
    const std::string text = take_echo(c, event, &lp) + event.text;
    if (logprobs_ && (echoes || !event.token_ids.empty())) {  // the slow path: the whole chunk built as JSON
        append_logprobs(c, event, lp);
        writer_->write(delta_chunk_with_logprobs(ids_, index, text, c.first_chunk, lp));
        c.first_chunk = false;
    } else if (echoes || !event.token_ids.empty() || !text.empty()) {
        writer_->write(delta_chunk(c.delta_format, text, c.first_chunk));
        c.first_chunk = false;
    }
}

void GenerationSink::write_reply_parts(int index, const engine::TokenEvent& event) {
    Choice& c = choices_[static_cast<size_t>(index)];
    std::vector<ReplyPart> parts = c.tools->push(event.text);
    if (event.finish != engine::FinishReason::kNone) {
        for (ReplyPart& p : c.tools->finish()) parts.push_back(std::move(p));
    }
    for (const ReplyPart& p : parts) {
        switch (p.kind) {
            case ReplyPart::Kind::kContent: writer_->write(delta_chunk(c.delta_format, p.text, c.first_chunk)); break;
            case ReplyPart::Kind::kCallStart:
                writer_->write(tool_call_start_chunk(ids_, index, p.call_index, p.id, p.name, c.first_chunk));
                break;
            case ReplyPart::Kind::kArguments:
                writer_->write(tool_call_arguments_chunk(ids_, index, p.call_index, p.text));
                break;
        }
        c.first_chunk = false;
    }
}

void GenerationSink::split_tool_calls(Choice& c) {
    std::vector<ReplyPart> parts = c.tools->push(c.text);
    for (ReplyPart& p : c.tools->finish()) parts.push_back(std::move(p));
    c.text.clear();
    for (ReplyPart& p : parts) {
        switch (p.kind) {
            case ReplyPart::Kind::kContent: c.text += p.text; break;
            case ReplyPart::Kind::kCallStart: c.tool_calls.push_back({.id = p.id, .name = p.name, .arguments = ""}); break;
            case ReplyPart::Kind::kArguments: c.tool_calls.at(static_cast<size_t>(p.call_index)).arguments += p.text; break;
        }
    }
}

// Streamed: an error event in place of the remaining finish chunks and the usage chunk, then [DONE].
void GenerationSink::end_with_error(const ApiError& error) {
    response_ended_ = true;
    annotate_access(error);
    if (stream_) {
        writer_->write(error_chunk(error));
        writer_->write(kDoneChunk);
        writer_->finish();
    } else {
        writer_->send(error.http_status, "application/json", error.to_json(), {{"X-Request-Id", ids_.id}});
    }
}

void GenerationSink::end_normally() {
    response_ended_ = true;
    annotate_access(std::nullopt);
    if (stream_) {
        if (include_usage_) writer_->write(usage_chunk(ids_, usage()));
        writer_->write(kDoneChunk);
        writer_->finish();
        return;
    }
    std::vector<ChoiceOutput> outputs;
    outputs.reserve(choices_.size());
    for (Choice& c : choices_) {
        outputs.push_back({std::move(c.text), c.finish_reason,
                           logprobs_ ? std::optional<nlohmann::ordered_json>(std::move(c.logprobs)) : std::nullopt,
                           std::move(c.tool_calls)});
    }
    writer_->send(200, "application/json", completion_body(ids_, outputs, usage()), {{"X-Request-Id", ids_.id}});
}

// The access log (its status is the one the HTTP layer sent: 200 for a streamed error) gets, for an
// error, its code in place of the finish reason; with several choices, their reasons joined by ','
// when they differ.
void GenerationSink::annotate_access(const std::optional<ApiError>& error) {
    const engine::TokenEvent t = totals();
    record_.num_tokens_prompt = t.num_prompt_tokens;
    record_.num_tokens_completion = t.num_generated_tokens;
    if (t.num_generated_tokens > 0) record_.ttft_ms = t.ttft_ms;
    if (error) {
        record_.finish_reason = error->code;
    } else {
        std::string reasons = choices_[0].finish_reason;
        bool all_same = true;
        for (const Choice& c : choices_) all_same = all_same && c.finish_reason == reasons;
        for (size_t i = 1; !all_same && i < choices_.size(); ++i) reasons += "," + choices_[i].finish_reason;
        record_.finish_reason = reasons;
    }
    writer_->annotate(record_);
}

engine::TokenEvent GenerationSink::totals() const {
    engine::TokenEvent t;
    t.num_prompt_tokens = num_prompt_tokens_;
    for (const Choice& c : choices_) {
        if (c.num_generated_tokens > 0 && (t.num_generated_tokens == 0 || c.ttft_ms < t.ttft_ms)) t.ttft_ms = c.ttft_ms;
        t.num_generated_tokens += c.num_generated_tokens;
    }
    return t;
}

// Prompt tokens once; of them cached, the fewest any choice found: the prompt's own hit (the children
// after the first find it cached because the first computed it for this very request).
Usage GenerationSink::usage() const {
    const engine::TokenEvent t = totals();
    int cached = choices_[0].num_cached_tokens;
    for (const Choice& c : choices_) cached = std::min(cached, c.num_cached_tokens);
    return {.prompt_tokens = t.num_prompt_tokens, .completion_tokens = t.num_generated_tokens, .cached_tokens = cached};
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
