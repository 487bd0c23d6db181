// What the API says when the engine refuses a request for load (Engine::Admission::kOverloaded), and
// the load that /health reports.
#pragma once

#include <cstdio>
#include <string>

#include "api/api_error.h"
#include "engine/engine.h"

namespace hichat::api {

// 503 naming the predicted wait; the caller adds Retry-After: engine.retry_after_s().
inline ApiError overloaded_error(const engine::Engine& engine) {
    char wait[32];
    std::snprintf(wait, sizeof(wait), "%.1f", engine.predicted_wait_ms() / 1000.0);
    return {.http_status = 503,
            .message = std::string("the server is overloaded: the requests waiting now are predicted to take ") + wait +
                       " s to start",
            .type = "server_error",
            .code = "overloaded"};
}

// {"requests_waiting", "requests_running", "waiting_prompt_tokens", "kv_blocks_free", "kv_blocks_total",
// "predicted_wait_ms"} for /health.
inline std::string load_json(const engine::EngineStats& s) {
    char buf[320];
    std::snprintf(buf, sizeof(buf),
                  R"({"requests_waiting":%d,"requests_running":%d,"waiting_prompt_tokens":%lld,"kv_blocks_free":%d,)"
                  R"("kv_blocks_total":%d,"predicted_wait_ms":%.1f})",
                  s.num_waiting, s.num_running, static_cast<long long>(s.waiting_prompt_tokens), s.num_kv_blocks_free,
                  s.num_kv_blocks_total, s.predicted_wait_ms);
    return buf;
}

}  // namespace hichat::api
