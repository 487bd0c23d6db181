// run_load(): sends the benchmark's requests over HTTP/1.1 keep-alive connections and times their SSE
// streams. Everything runs on the calling thread: one Boost.Asio io_context, one coroutine ("lane")
// per concurrency slot, each owning one connection; a lane takes the next request in arrival order,
// waits for its arrival time, runs it, and repeats. So at most max_concurrency requests are in flight,
// requests never wait on each other beyond that, and 256 streams cost 256 sockets, not 256 threads.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "bench/http_target.h"
#include "bench/request_outcome.h"

namespace hichat::tools::bench {

struct LoadRequest {
    std::string http_bytes;     // the full HTTP request (http_post())
    int num_prompt_tokens = 0;  // as sent; 0 for a text prompt (its length is the server's count)
    bool keep_text = false;     // keep the streamed text in RequestOutcome::output_text
    bool responses_events = false;  // the stream is the Responses API's (POST /v1/responses), not choices chunks
};

struct LoadConfig {
    HttpTarget target;
    int max_concurrency = 1;  // lanes; at most this many requests in flight
};

struct LoadResult {
    std::vector<RequestOutcome> outcomes;  // [num_requests], in request order
    double duration_s = 0;                 // start of the first lane to the end of the last request
    int max_concurrent_requests = 0;       // the most requests that were in flight at once
};

// `arrivals_s` [num_requests] are seconds after the start. Errors: only when the host cannot be
// resolved; a request that fails (refused, reset, non-200, malformed stream) is a failed outcome.
Result<LoadResult> run_load(const LoadConfig& config, const std::vector<LoadRequest>& requests,
                            const std::vector<double>& arrivals_s);

}  // namespace hichat::tools::bench
