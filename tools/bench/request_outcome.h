// RequestOutcome: what the load generator measured for one request, with vLLM's definitions
// (shared/reference/anchors-performance.md §2.1). Times are seconds on the steady clock, relative to
// the start of the benchmark.
#pragma once

#include <string>
#include <vector>

namespace hichat::tools::bench {

struct RequestOutcome {
    bool success = false;               // HTTP 200, at least one `choices` chunk (Responses API: one
                                        // output_text delta and response.completed), no error event
    std::string error;                  // why not, when !success
    double start_s = 0;                 // when a free lane took it up after its arrival time (so connect
                                        // time counts, as in vLLM's client; client queueing does not)
    double ttft_s = 0;                  // first `choices` chunk - start
    double latency_s = 0;               // last `choices` chunk - start (a usage-only chunk does not count)
    std::vector<double> itl_s;          // [num_token_chunks - 1] gaps between consecutive token chunks
    int num_prompt_tokens = 0;          // as sent; text prompts (multi-turn): usage.prompt_tokens, else 0
    int num_output_tokens = 0;          // usage.completion_tokens of the final chunk, else num_token_chunks
    int num_usage_prompt_tokens = -1;   // usage.prompt_tokens as the server reported it; -1: no usage
    int num_token_chunks = 0;           // `choices` chunks that carry a token (see StreamRecorder)
    int num_cached_prompt_tokens = -1;  // usage.prompt_tokens_details.cached_tokens; -1: not reported
    std::string output_text;            // the streamed text, joined; only when the request asked for it
    std::string response_id;            // Responses API streams: the response's id (the next turn's
                                        // previous_response_id)
};

}  // namespace hichat::tools::bench
