#include "bench/benchmark_report.h"

#include <cstdio>
#include <ctime>

namespace hichat::tools::bench {
namespace {

std::string line(const char* label, const std::string& value) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%-40s %-10s\n", label, value.c_str());
    return buf;
}

std::string fixed(double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.2f", v);
    return buf;
}

std::string banner(const std::string& title, char fill) {
    const size_t width = 50;
    const size_t left = (width - title.size()) / 2;
    return std::string(left, fill) + title + std::string(width - left - title.size(), fill) + "\n";
}

std::string stats_block(const char* title, const char* name, const LatencyStats& s) {
    std::string out = banner(title, '-');
    out += line(("Mean " + std::string(name) + " (ms):").c_str(), fixed(s.mean_ms));
    out += line(("Median " + std::string(name) + " (ms):").c_str(), fixed(s.median_ms));
    out += line(("P99 " + std::string(name) + " (ms):").c_str(), fixed(s.p99_ms));
    return out;
}

void add_stats(nlohmann::ordered_json& j, const std::string& key, const LatencyStats& s) {
    j["mean_" + key + "_ms"] = s.mean_ms;
    j["median_" + key + "_ms"] = s.median_ms;
    j["std_" + key + "_ms"] = s.std_ms;
    j["p99_" + key + "_ms"] = s.p99_ms;
}

std::string percent_or_na(const CachedPromptShare& c) {
    const auto share = c.share();
    return share ? fixed(100.0 * *share) + "%" : "n/a";
}

nlohmann::ordered_json share_json(const CachedPromptShare& c) {
    const auto share = c.share();
    return share ? nlohmann::ordered_json(*share) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json turns_json(const std::vector<TurnStats>& turns) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const TurnStats& t : turns) {
        out.push_back({{"turn", t.turn},
                       {"completed", t.num_completed},
                       {"failed", t.num_failed},
                       {"mean_ttft_ms", t.ttft.mean_ms},
                       {"median_ttft_ms", t.ttft.median_ms},
                       {"p99_ttft_ms", t.ttft.p99_ms},
                       {"cached_prompt_share", share_json(t.cache)}});
    }
    return out;
}

std::string turns_block(const std::vector<TurnStats>& turns) {
    std::string out = banner("TTFT by Turn", '-');
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%-6s %-6s %-10s %-10s %-10s %-8s\n", "Turn", "Done", "Mean(ms)",
                  "Median(ms)", "P99(ms)", "Cached");
    out += buf;
    for (const TurnStats& t : turns) {
        std::snprintf(buf, sizeof(buf), "%-6d %-6d %-10.2f %-10.2f %-10.2f %-8s\n", t.turn, t.num_completed,
                      t.ttft.mean_ms, t.ttft.median_ms, t.ttft.p99_ms, percent_or_na(t.cache).c_str());
        out += buf;
    }
    return out;
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
    return buf;
}

}  // namespace

BenchmarkReport make_report(const LoadResult& load, int num_turns) {
    BenchmarkReport r;
    r.cache = cached_prompt_share(load.outcomes);
    if (num_turns > 0) r.turns = stats_by_turn(load.outcomes, num_turns);
    std::vector<double> ttfts, tpots, itls, e2els;
    for (const RequestOutcome& o : load.outcomes) {
        if (!o.success) {
            ++r.num_failed;
            continue;
        }
        ++r.num_completed;
        r.num_input_tokens += o.num_prompt_tokens;
        r.num_output_tokens += o.num_output_tokens;
        ttfts.push_back(o.ttft_s);
        e2els.push_back(o.latency_s);
        if (o.num_output_tokens > 1) tpots.push_back((o.latency_s - o.ttft_s) / (o.num_output_tokens - 1));
        itls.insert(itls.end(), o.itl_s.begin(), o.itl_s.end());
    }
    r.duration_s = load.duration_s;
    r.max_concurrent_requests = load.max_concurrent_requests;
    if (r.duration_s > 0) {
        r.request_throughput = r.num_completed / r.duration_s;
        r.output_throughput = static_cast<double>(r.num_output_tokens) / r.duration_s;
        r.total_token_throughput =
            static_cast<double>(r.num_input_tokens + r.num_output_tokens) / r.duration_s;
    }
    r.ttft = summarize_ms(ttfts);
    r.tpot = summarize_ms(tpots);
    r.itl = summarize_ms(itls);
    r.e2el = summarize_ms(e2els);
    return r;
}

nlohmann::ordered_json report_json(const BenchmarkReport& r, const BenchmarkSettings& s) {
    nlohmann::ordered_json j;
    j["date"] = utc_now();
    j["backend"] = "openai";
    j["endpoint"] = s.endpoint;
    j["base_url"] = s.base_url;
    j["model_id"] = s.model;
    if (!s.commit.empty()) j["commit"] = s.commit;
    if (!s.extra_body.empty()) j["extra_body"] = s.extra_body;
    j["dataset"] = s.dataset;
    for (const auto& [key, value] : s.dataset_params) j[key] = value;
    j["num_prompts"] = s.num_prompts;
    j["input_len"] = s.input_len;
    j["output_len"] = s.output_len;
    j["request_rate"] =
        s.request_rate > 0 ? nlohmann::ordered_json(s.request_rate) : nlohmann::ordered_json("inf");
    j["burstiness"] = 1.0;
    j["max_concurrency"] = s.max_concurrency;
    j["seed"] = s.seed;
    j["duration"] = r.duration_s;
    j["completed"] = r.num_completed;
    j["failed"] = r.num_failed;
    j["total_input_tokens"] = r.num_input_tokens;
    j["total_output_tokens"] = r.num_output_tokens;
    j["request_throughput"] = r.request_throughput;
    j["output_throughput"] = r.output_throughput;
    j["total_token_throughput"] = r.total_token_throughput;
    j["max_concurrent_requests"] = r.max_concurrent_requests;
    add_stats(j, "ttft", r.ttft);
    add_stats(j, "tpot", r.tpot);
    add_stats(j, "itl", r.itl);
    add_stats(j, "e2el", r.e2el);
    j["cached_prompt_tokens"] = r.cache.num_cached_tokens;
    j["cached_prompt_share"] = share_json(r.cache);
    if (!r.turns.empty()) j["turns"] = turns_json(r.turns);
    return j;
}

std::string report_table(const BenchmarkReport& r, const BenchmarkSettings& s) {
    std::string out = banner(" Serving Benchmark Result ", '=');
    out += line("Dataset:", s.dataset);
    out += line("Successful requests:", std::to_string(r.num_completed));
    out += line("Failed requests:", std::to_string(r.num_failed));
    out += line("Maximum request concurrency:", std::to_string(s.max_concurrency));
    out += line("Request rate (req/s):", s.request_rate > 0 ? fixed(s.request_rate) : "inf");
    out += line("Benchmark duration (s):", fixed(r.duration_s));
    out += line("Total input tokens:", std::to_string(r.num_input_tokens));
    out += line("Total generated tokens:", std::to_string(r.num_output_tokens));
    out += line("Request throughput (req/s):", fixed(r.request_throughput));
    out += line("Output token throughput (tok/s):", fixed(r.output_throughput));
    out += line("Total Token throughput (tok/s):", fixed(r.total_token_throughput));
    out += line("Peak concurrent requests:", std::to_string(r.max_concurrent_requests));
    out += line("Prompt tokens served from cache:", percent_or_na(r.cache));
    out += stats_block("Time to First Token", "TTFT", r.ttft);
    if (!r.turns.empty()) out += turns_block(r.turns);
    out += stats_block("Time per Output Token (excl. 1st token)", "TPOT", r.tpot);
    out += stats_block("Inter-token Latency", "ITL", r.itl);
    out += stats_block("End-to-end Latency", "E2EL", r.e2el);
    out += std::string(50, '=') + "\n";
    return out;
}

}  // namespace hichat::tools::bench
