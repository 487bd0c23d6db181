// BenchmarkReport: the aggregates `vllm bench serve` prints, computed from the per-request outcomes
// with its definitions (shared/reference/anchors-performance.md §2.1): only successful requests count;
// TPOT is one value per request with more than one output token; ITL pools every gap of every request.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bench/cached_prompt_share.h"
#include "bench/latency_stats.h"
#include "bench/load_generator.h"
#include "bench/turn_stats.h"

namespace hichat::tools::bench {

// What was asked for; echoed in the table and the JSON line.
struct BenchmarkSettings {
    std::string dataset = "random";  // random | shared-prefix | multi-turn
    // The dataset's own parameters, echoed as JSON keys in this order ({"gsp_num_groups", 64}, ...).
    std::vector<std::pair<std::string, int64_t>> dataset_params;
    std::string base_url;
    std::string endpoint;
    std::string model;
    int num_prompts = 0;  // requests (multi-turn: conversations x turns)
    int input_len = 0;    // prompt tokens per request (shared-prefix: system + question; multi-turn: 0)
    int output_len = 0;
    int max_concurrency = 0;
    double request_rate = 0;  // 0: all at once ("inf")
    uint64_t seed = 0;
    std::string commit;  // HICHAT_COMMIT, empty if unset
    std::string extra_body;  // --extra-body as sent (empty: none)
};

struct BenchmarkReport {
    int num_completed = 0;
    int num_failed = 0;
    double duration_s = 0;
    int64_t num_input_tokens = 0;       // prompt tokens of the successful requests, as sent
    int64_t num_output_tokens = 0;      // usage.completion_tokens of the successful requests
    double request_throughput = 0;      // completed / duration, requests/s
    double output_throughput = 0;       // output tokens / duration, tokens/s
    double total_token_throughput = 0;  // (input + output tokens) / duration, tokens/s
    int max_concurrent_requests = 0;
    LatencyStats ttft, tpot, itl, e2el;
    CachedPromptShare cache;       // over all successful requests
    std::vector<TurnStats> turns;  // [num_turns] for the multi-turn dataset, else empty
};

// `num_turns` > 0: the outcomes are a multi-turn run's (conversation-major); fills `turns`.
BenchmarkReport make_report(const LoadResult& load, int num_turns = 0);

// One JSON object with vLLM's result keys (completed, failed, duration, request_throughput,
// output_throughput, total_token_throughput, {mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms, ...), then
// ours: cached_prompt_tokens and cached_prompt_share (null when the server did not report
// cached_tokens), and for multi-turn "turns": [{turn, completed, failed, {mean,median,p99}_ttft_ms,
// cached_prompt_share}].
nlohmann::ordered_json report_json(const BenchmarkReport& report, const BenchmarkSettings& settings);

// The human-readable table, laid out as vLLM prints it.
std::string report_table(const BenchmarkReport& report, const BenchmarkSettings& settings);

}  // namespace hichat::tools::bench
