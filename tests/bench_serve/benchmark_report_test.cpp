// Aggregates over hand-built outcomes, checked against values worked out by hand with vLLM's rules.
#include "bench/benchmark_report.h"

#include <gtest/gtest.h>

#include <regex>

namespace hichat::tools::bench {
namespace {

RequestOutcome success(double ttft_s, std::vector<double> itl_s, int num_output_tokens) {
    RequestOutcome o;
    o.success = true;
    o.ttft_s = ttft_s;
    double t = ttft_s;
    for (double gap : itl_s) t += gap;
    o.latency_s = t;
    o.itl_s = std::move(itl_s);
    o.num_prompt_tokens = 16;
    o.num_output_tokens = num_output_tokens;
    o.num_token_chunks = num_output_tokens;
    return o;
}

LoadResult sample_load() {
    LoadResult load;
    load.duration_s = 2.0;
    load.max_concurrent_requests = 3;
    load.outcomes.push_back(success(0.1, {0.2, 0.2, 0.2}, 4));  // e2e 0.7, tpot 0.6 / 3 = 0.2
    load.outcomes.push_back(success(0.3, {0.1, 0.5}, 3));       // e2e 0.9, tpot 0.6 / 2 = 0.3
    load.outcomes.push_back(success(0.2, {}, 1));               // e2e 0.2, no tpot (one token)
    RequestOutcome failed;
    failed.error = "HTTP 500: boom";
    failed.num_prompt_tokens = 16;
    load.outcomes.push_back(failed);
    return load;
}

TEST(BenchmarkReport, AggregatesOnlySuccessfulRequests) {
    const BenchmarkReport r = make_report(sample_load());
    EXPECT_EQ(r.num_completed, 3);
    EXPECT_EQ(r.num_failed, 1);
    EXPECT_EQ(r.num_input_tokens, 48);
    EXPECT_EQ(r.num_output_tokens, 8);
    EXPECT_DOUBLE_EQ(r.request_throughput, 1.5);
    EXPECT_DOUBLE_EQ(r.output_throughput, 4.0);
    EXPECT_DOUBLE_EQ(r.total_token_throughput, 28.0);
    EXPECT_EQ(r.max_concurrent_requests, 3);
}

TEST(BenchmarkReport, LatencyMetricsFollowVllm) {
    const BenchmarkReport r = make_report(sample_load());
    // TTFT over {0.1, 0.3, 0.2}
    EXPECT_NEAR(r.ttft.mean_ms, 200, 1e-9);
    EXPECT_NEAR(r.ttft.median_ms, 200, 1e-9);
    EXPECT_NEAR(r.ttft.p99_ms, 200 + 0.98 * 100, 1e-9);
    // TPOT per request with > 1 token: {0.2, 0.3}
    EXPECT_NEAR(r.tpot.mean_ms, 250, 1e-9);
    EXPECT_NEAR(r.tpot.p99_ms, 200 + 0.99 * 100, 1e-9);
    // ITL pooled: {0.2, 0.2, 0.2, 0.1, 0.5}: mean 0.24, median 0.2, p99 at rank 3.96 between 0.2 and 0.5
    EXPECT_NEAR(r.itl.mean_ms, 240, 1e-9);
    EXPECT_NEAR(r.itl.median_ms, 200, 1e-9);
    EXPECT_NEAR(r.itl.p99_ms, 200 + 0.96 * 300, 1e-9);
    // E2E {0.7, 0.9, 0.2}
    EXPECT_NEAR(r.e2el.mean_ms, 600, 1e-9);
    EXPECT_NEAR(r.e2el.median_ms, 700, 1e-9);
}

TEST(BenchmarkReport, JsonCarriesVllmKeys) {
    BenchmarkSettings s;
    s.max_concurrency = 4;
    s.input_len = 16;
    s.output_len = 4;
    s.commit = "abc123";
    const auto j = report_json(make_report(sample_load()), s);
    EXPECT_EQ(j["completed"], 3);
    EXPECT_EQ(j["failed"], 1);
    EXPECT_EQ(j["total_output_tokens"], 8);
    EXPECT_DOUBLE_EQ(j["request_throughput"].get<double>(), 1.5);
    EXPECT_DOUBLE_EQ(j["output_throughput"].get<double>(), 4.0);
    EXPECT_NEAR(j["mean_tpot_ms"].get<double>(), 250, 1e-9);
    EXPECT_NEAR(j["median_itl_ms"].get<double>(), 200, 1e-9);
    EXPECT_TRUE(j.contains("p99_e2el_ms"));
    EXPECT_TRUE(j.contains("std_ttft_ms"));
    EXPECT_EQ(j["max_concurrency"], 4);
    EXPECT_EQ(j["request_rate"], "inf");
    EXPECT_EQ(j["commit"], "abc123");
    const std::string table = report_table(make_report(sample_load()), s);
    EXPECT_TRUE(std::regex_search(table, std::regex("\nSuccessful requests: +3 *\n"))) << table;
    EXPECT_TRUE(std::regex_search(table, std::regex("\nFailed requests: +1 *\n"))) << table;
    EXPECT_TRUE(std::regex_search(table, std::regex("\nMean TPOT \\(ms\\): +250\\.00 *\n"))) << table;
}

TEST(BenchmarkReport, CachedShareIsNullAndNaWhenTheServerDoesNotReportIt) {
    BenchmarkSettings s;
    const BenchmarkReport r = make_report(sample_load());
    const auto j = report_json(r, s);
    EXPECT_EQ(j["dataset"], "random");
    EXPECT_TRUE(j["cached_prompt_share"].is_null());
    EXPECT_EQ(j["cached_prompt_tokens"], 0);
    EXPECT_FALSE(j.contains("turns"));
    const std::string table = report_table(r, s);
    EXPECT_TRUE(std::regex_search(table, std::regex("\nPrompt tokens served from cache: +n/a *\n"))) << table;
    EXPECT_EQ(table.find("TTFT by Turn"), std::string::npos);
}

TEST(BenchmarkReport, MultiTurnReportsCachedShareAndTtftByTurn) {
    // 2 conversations x 2 turns, conversation-major.
    LoadResult load;
    load.duration_s = 1.0;
    auto add = [&](double ttft_s, int prompt_tokens, int cached_tokens) {
        RequestOutcome o;
        o.success = true;
        o.ttft_s = o.latency_s = ttft_s;
        o.num_prompt_tokens = o.num_usage_prompt_tokens = prompt_tokens;
        o.num_cached_prompt_tokens = cached_tokens;
        o.num_output_tokens = o.num_token_chunks = 1;
        load.outcomes.push_back(o);
    };
    add(0.100, 40, 0), add(0.010, 90, 80), add(0.300, 40, 0), add(0.030, 90, 60);
    BenchmarkSettings s;
    s.dataset = "multi-turn";
    s.dataset_params = {{"mt_num_conversations", 2}, {"mt_num_turns", 2}};
    const BenchmarkReport r = make_report(load, 2);
    const auto j = report_json(r, s);
    EXPECT_EQ(j["dataset"], "multi-turn");
    EXPECT_EQ(j["mt_num_turns"], 2);
    EXPECT_EQ(j["cached_prompt_tokens"], 140);
    EXPECT_DOUBLE_EQ(j["cached_prompt_share"].get<double>(), 140.0 / 260.0);
    ASSERT_EQ(j["turns"].size(), 2u);
    EXPECT_EQ(j["turns"][0]["turn"], 0);
    EXPECT_EQ(j["turns"][0]["completed"], 2);
    EXPECT_NEAR(j["turns"][0]["mean_ttft_ms"].get<double>(), 200, 1e-9);
    EXPECT_NEAR(j["turns"][0]["median_ttft_ms"].get<double>(), 200, 1e-9);
    EXPECT_NEAR(j["turns"][0]["p99_ttft_ms"].get<double>(), 100 + 0.99 * 200, 1e-9);
    EXPECT_DOUBLE_EQ(j["turns"][0]["cached_prompt_share"].get<double>(), 0.0);
    EXPECT_NEAR(j["turns"][1]["mean_ttft_ms"].get<double>(), 20, 1e-9);
    EXPECT_DOUBLE_EQ(j["turns"][1]["cached_prompt_share"].get<double>(), 140.0 / 180.0);
    const std::string table = report_table(r, s);
    EXPECT_TRUE(std::regex_search(table, std::regex("\nPrompt tokens served from cache: +53\\.85% *\n"))) << table;
    EXPECT_TRUE(std::regex_search(table, std::regex("\n1 +2 +20\\.00 +20\\.00 +29\\.80 +77\\.78% *\n"))) << table;
}

}  // namespace
}  // namespace hichat::tools::bench
