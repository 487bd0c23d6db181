// StreamRecorder: turns the SSE events of one streamed completion into a RequestOutcome, timing them
// as `vllm bench serve` does. Owned by the lane that runs the request; single thread.
//
// A "choices" event is a JSON object with a non-empty `choices` array. TTFT is taken at the first one
// and E2E latency at the last one. ITL is the gap between consecutive *token* chunks: every choices
// event except a pure end marker (empty text and a non-null `finish_reason`), which carries no token;
// vLLM counts that marker as one more gap of about 0 ms, which would bias the ITL median and mean down.
//
// A Responses API stream (`responses_events`) is read by event type instead: each
// response.output_text.delta is a token chunk; response.created and the last event give the id; the
// last event, response.completed or response.incomplete (the end at max_output_tokens), the usage
// (input_tokens, output_tokens, input_tokens_details.cached_tokens); response.failed or an error event
// fail the request.
#pragma once

#include <string_view>

#include "bench/request_outcome.h"

namespace hichat::tools::bench {

class StreamRecorder {
public:
    // `keep_text`: join the streamed text into RequestOutcome::output_text (multi-turn needs it to build
    // the next turn's prompt; the other datasets leave it off).
    StreamRecorder(double start_s, int num_prompt_tokens, bool keep_text = false, bool responses_events = false);

    // One event's data, received at `now_s`. Malformed JSON or an `error` object fails the request.
    void on_event(std::string_view data, double now_s);

    bool saw_done() const { return saw_done_; }

    // The outcome once the body ended. `transport_error` (empty if none) fails the request.
    RequestOutcome finish(const std::string& transport_error);

private:
    void on_token_chunk(double now_s);
    void on_responses_event(std::string_view data, double now_s);

    RequestOutcome out_;
    bool keep_text_ = false;
    bool responses_events_ = false;
    bool saw_completed_ = false;  // response.completed (Responses API streams)
    bool saw_choices_ = false;
    bool saw_done_ = false;
    double last_token_s_ = 0;    // time of the latest token chunk
    int num_usage_tokens_ = -1;  // usage.completion_tokens; -1 until a usage object arrives
};

}  // namespace hichat::tools::bench
