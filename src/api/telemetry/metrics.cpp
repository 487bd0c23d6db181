#include "api/telemetry/metrics.h"

#include "api/telemetry/prometheus_text.h"

namespace hichat::api {
namespace {

// Bucket bounds chosen for interactive LLM serving: TTFT from 1 ms (cached prefix) to tens of seconds
// (long prompts under load), inter-token from sub-ms to 1 s, request sizes up to a 128k context.
const std::vector<double> kTimeToFirstTokenBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
                                                     0.5,   0.75,  1.0,  2.5,  5.0,  7.5,  10.0, 20.0, 40.0};
const std::vector<double> kInterTokenBounds = {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025,
                                               0.03,  0.04,   0.05,  0.075,  0.1,  0.25,  0.5,  1.0};
const std::vector<double> kE2eLatencyBounds = {0.1, 0.25, 0.5, 1.0,  2.5,  5.0,   10.0,  15.0,
                                               20.0, 30.0, 40.0, 60.0, 120.0, 300.0, 600.0};
// Engine steps: from a sub-ms decode of a small model to seconds of a long prefill on the CPU; the
// prefill tokens of a step from none (decode only) to a whole large budget.
const std::vector<double> kStepBounds = {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04,
                                         0.05,  0.075,  0.1,   0.25,   0.5,  1.0,   2.5,  5.0};
const std::vector<double> kStepPrefillBounds = {0, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> kTokenCountBounds = {1,    2,    5,     10,    20,    50,    100,    200,   500,
                                               1000, 2000, 5000, 10000, 20000, 50000, 100000, 131072};

}  // namespace

Metrics::Metrics()
    : requests_("hichat_requests_total", "HTTP requests finished, by endpoint and status code.",
                {"endpoint", "code"}),
      prompt_tokens_("hichat_prompt_tokens_total", "Prompt tokens processed."),
      generation_tokens_("hichat_generation_tokens_total", "Tokens generated."),
      time_to_first_token_("hichat_time_to_first_token_seconds",
                           "Time from request arrival to the first generated token.", kTimeToFirstTokenBounds),
      inter_token_latency_("hichat_inter_token_latency_seconds", "Time between consecutive generated tokens.",
                           kInterTokenBounds),
      e2e_latency_("hichat_e2e_request_latency_seconds", "Time from request arrival to its last byte.",
                   kE2eLatencyBounds),
      request_prompt_tokens_("hichat_request_prompt_tokens", "Prompt tokens per request.", kTokenCountBounds),
      request_generation_tokens_("hichat_request_generation_tokens", "Generated tokens per request.",
                                 kTokenCountBounds),
      step_duration_("hichat_step_duration_seconds", "Time of one engine step (a forward pass of the batch).",
                     kStepBounds),
      step_prefill_tokens_("hichat_step_prefill_tokens", "Prompt (prefill) tokens per engine step.",
                           kStepPrefillBounds) {}

void Metrics::count_request(std::string_view endpoint, int status_code) {
    requests_.add({std::string(endpoint), std::to_string(status_code)});
}

void Metrics::observe_time_to_first_token(double seconds) { time_to_first_token_.observe(seconds); }
void Metrics::observe_inter_token_latency(double seconds) { inter_token_latency_.observe(seconds); }
void Metrics::observe_e2e_latency(double seconds) { e2e_latency_.observe(seconds); }

void Metrics::observe_step(double seconds, int prefill_tokens) {
    step_duration_.observe(seconds);
    step_prefill_tokens_.observe(prefill_tokens);
}

void Metrics::observe_request_tokens(int64_t num_tokens_prompt, int64_t num_tokens_generated) {
    request_prompt_tokens_.observe(static_cast<double>(num_tokens_prompt));
    request_generation_tokens_.observe(static_cast<double>(num_tokens_generated));
    if (num_tokens_prompt > 0) prompt_tokens_.add(static_cast<uint64_t>(num_tokens_prompt));
    if (num_tokens_generated > 0) generation_tokens_.add(static_cast<uint64_t>(num_tokens_generated));
}

void Metrics::set_engine_gauges_source(std::function<EngineGauges()> source) {
    std::lock_guard lock(gauges_mutex_);
    gauges_source_ = std::move(source);
}

void Metrics::render_gauges(std::string& out) const {
    std::function<EngineGauges()> source;
    {
        std::lock_guard lock(gauges_mutex_);
        source = gauges_source_;
    }
    if (!source) return;
    EngineGauges g = source();
    auto gauge = [&out](std::string_view name, std::string_view help, int64_t value) {
        append_header(out, name, help, "gauge");
        append_sample(out, name, {}, std::to_string(value));
    };
    gauge("hichat_num_requests_waiting", "Requests queued and not yet scheduled.", g.num_requests_waiting);
    gauge("hichat_num_requests_running", "Sequences in the running batch.", g.num_requests_running);
    auto counter = [&out](std::string_view name, std::string_view help, int64_t value) {
        append_header(out, name, help, "counter");
        append_sample(out, name, {}, std::to_string(value));
    };
    gauge("hichat_kv_blocks_used", "KV cache blocks held by running or waiting sequences.", g.num_kv_blocks_used);
    gauge("hichat_kv_blocks_free", "KV cache blocks no sequence holds (cached ones included): allocatable.",
          g.num_kv_blocks_free);
    gauge("hichat_kv_blocks_cached", "KV cache blocks no sequence holds whose KV is kept for the prefix cache.",
          g.num_kv_blocks_cached);
    counter("hichat_prefix_cache_queried_tokens_total", "Prompt tokens looked up in the prefix cache at admission.",
            g.prefix_cache_queried_tokens);
    counter("hichat_prefix_cache_hit_tokens_total", "Prompt tokens whose KV came from the prefix cache.",
            g.prefix_cache_hit_tokens);
    counter("hichat_prefix_cache_preempted_queried_tokens_total",
            "Tokens looked up again when a preempted sequence was readmitted.",
            g.prefix_cache_preempted_queried_tokens);
    counter("hichat_prefix_cache_preempted_hit_tokens_total",
            "Tokens of readmitted preempted sequences found in the prefix cache.", g.prefix_cache_preempted_hit_tokens);
    counter("hichat_prefix_cache_evictions_total", "Cached KV blocks dropped to make room.", g.prefix_cache_evictions);
    counter("hichat_prefix_cache_host_hit_tokens_total",
            "Prompt tokens whose KV was copied back from the host-memory tier (part of the hits).",
            g.prefix_cache_host_hit_tokens);
    gauge("hichat_host_kv_blocks_total", "Blocks the host-memory KV tier holds (0: no tier).", g.num_host_kv_blocks_total);
    gauge("hichat_host_kv_blocks_used", "Host-tier blocks holding a copy of an evicted KV block.",
          g.num_host_kv_blocks_used);
    counter("hichat_host_kv_offloaded_blocks_total", "KV blocks copied to the host tier when evicted from the device.",
            g.host_kv_offloaded_blocks);
    counter("hichat_host_kv_restored_blocks_total", "KV blocks copied back from the host tier on a prefix hit.",
            g.host_kv_restored_blocks);
    counter("hichat_host_kv_dropped_blocks_total", "Host-tier copies overwritten by newer ones (least recently used).",
            g.host_kv_dropped_blocks);
    gauge("hichat_preprocess_workers", "Threads that parse and tokenize generation requests.", g.num_preprocess_workers);
    gauge("hichat_preprocess_tasks_running", "Generation requests being parsed and tokenized now.",
          g.num_preprocess_tasks_running);
    gauge("hichat_preprocess_tasks_queued", "Generation requests waiting for a preprocessing thread.",
          g.num_preprocess_tasks_queued);
    counter("hichat_itl_target_misses_total", "Engine steps that took longer than their --target-itl-ms.",
            g.itl_target_misses);
    counter("hichat_ttft_target_misses_total", "Requests whose first token came later than their --target-ttft-ms.",
            g.ttft_target_misses);
}

std::string Metrics::render() const {
    std::string out;
    requests_.render(out);
    prompt_tokens_.render(out);
    generation_tokens_.render(out);
    render_gauges(out);
    time_to_first_token_.render(out);
    inter_token_latency_.render(out);
    e2e_latency_.render(out);
    request_prompt_tokens_.render(out);
    request_generation_tokens_.render(out);
    step_duration_.render(out);
    step_prefill_tokens_.render(out);
    return out;
}

}  // namespace hichat::api
