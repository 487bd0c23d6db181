// Metrics: HiChat's Prometheus registry, rendered at GET /metrics. Thread-safe: HTTP threads count
// requests and observe latencies; the scrape thread calls render(). Every name starts with "hichat_".
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "api/telemetry/counter_family.h"
#include "api/telemetry/histogram.h"

namespace hichat::api {

// Engine and preprocessing state read once per scrape. The source must be callable from any thread
// (the engine and the pool publish these numbers through atomics or their own locks).
struct EngineGauges {
    int64_t num_requests_waiting = 0;  // queued, not yet scheduled
    int64_t num_requests_running = 0;  // sequences in the running batch
    int64_t num_kv_blocks_used = 0;    // held by a sequence
    int64_t num_kv_blocks_free = 0;    // held by none, cached ones included
    int64_t num_kv_blocks_cached = 0;  // held by none, KV kept for the prefix cache
    // Engine counters (monotonic), in tokens: prefix-cache lookups at admission and their hits;
    // re-admissions after a preemption apart.
    int64_t prefix_cache_queried_tokens = 0, prefix_cache_hit_tokens = 0;
    int64_t prefix_cache_preempted_queried_tokens = 0, prefix_cache_preempted_hit_tokens = 0;
    int64_t prefix_cache_evictions = 0;  // cached blocks dropped to make room
    int64_t prefix_cache_host_hit_tokens = 0;  // of the hits, copied back from the host tier
    // The host-memory KV tier (CUDA): blocks, and copies (monotonic).
    int64_t num_host_kv_blocks_total = 0, num_host_kv_blocks_used = 0;
    int64_t host_kv_offloaded_blocks = 0, host_kv_restored_blocks = 0, host_kv_dropped_blocks = 0;
    int64_t num_preprocess_workers = 0;       // threads that parse and tokenize generation requests
    int64_t num_preprocess_tasks_running = 0;
    int64_t num_preprocess_tasks_queued = 0;
    // The scheduler's latency targets missed (monotonic): steps over their ITL target, first tokens
    // later than their TTFT target.
    int64_t itl_target_misses = 0, ttft_target_misses = 0;
};

class Metrics {
public:
    Metrics();

    // One finished HTTP request. endpoint: the route ("/v1/chat/completions"), never a raw client
    // path, so that the number of series stays bounded.
    void count_request(std::string_view endpoint, int status_code);

    void observe_time_to_first_token(double seconds);
    void observe_inter_token_latency(double seconds);
    void observe_e2e_latency(double seconds);
    // Per-request token counts: fills both histograms and the prompt/generation totals.
    void observe_request_tokens(int64_t num_tokens_prompt, int64_t num_tokens_generated);
    // One engine step: its duration and the prefill tokens it held.
    void observe_step(double seconds, int prefill_tokens);

    // Gauges come from this callback at scrape time; without one they are not rendered.
    void set_engine_gauges_source(std::function<EngineGauges()> source);

    // The whole registry in the Prometheus text format (serve with kPrometheusContentType).
    std::string render() const;

    const CounterFamily& requests() const { return requests_; }
    const Counter& prompt_tokens() const { return prompt_tokens_; }
    const Counter& generation_tokens() const { return generation_tokens_; }
    const Histogram& time_to_first_token() const { return time_to_first_token_; }
    const Histogram& inter_token_latency() const { return inter_token_latency_; }
    const Histogram& e2e_latency() const { return e2e_latency_; }
    const Histogram& request_prompt_tokens() const { return request_prompt_tokens_; }
    const Histogram& request_generation_tokens() const { return request_generation_tokens_; }
    const Histogram& step_duration() const { return step_duration_; }
    const Histogram& step_prefill_tokens() const { return step_prefill_tokens_; }

private:
    void render_gauges(std::string& out) const;

    CounterFamily requests_;
    Counter prompt_tokens_;
    Counter generation_tokens_;
    Histogram time_to_first_token_;
    Histogram inter_token_latency_;
    Histogram e2e_latency_;
    Histogram request_prompt_tokens_;
    Histogram request_generation_tokens_;
    Histogram step_duration_;
    Histogram step_prefill_tokens_;

    mutable std::mutex gauges_mutex_;
    std::function<EngineGauges()> gauges_source_;  // guarded by gauges_mutex_
};

}  // namespace hichat::api
