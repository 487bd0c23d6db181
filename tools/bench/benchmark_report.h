// BenchmarkReport: the aggregates `vllm bench serve` prints, computed from the per-request outcomes
// with its definitions (shared/reference/anchors-performance.md §2.1): only successful requests count;
// TPOT is one value per request with more than one output token; ITL pools every gap of every request.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/latency_stats.h"
#include "bench/load_generator.h"

namespace hichat::tools::bench {

// What was asked for; echoed in the table and the JSON line.
struct BenchmarkSettings {
    std::string base_url;
    std::string endpoint;
    std::string model;
    int num_prompts = 0;
    int input_len = 0;
    int output_len = 0;
    int max_concurrency = 0;
    double request_rate = 0;  // 0: all at once ("inf")
    uint64_t seed = 0;
    std::string commit;  // HICHAT_COMMIT, empty if unset
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
};

BenchmarkReport make_report(const LoadResult& load);

// One JSON object with vLLM's result keys (completed, failed, duration, request_throughput,
// output_throughput, total_token_throughput, {mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms, ...).
nlohmann::ordered_json report_json(const BenchmarkReport& report, const BenchmarkSettings& settings);

// The human-readable table, laid out as vLLM prints it.
std::string report_table(const BenchmarkReport& report, const BenchmarkSettings& settings);

}  // namespace hichat::tools::bench
