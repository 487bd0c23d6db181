#include "api/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "api/telemetry/prometheus_text.h"

namespace hichat::api {
namespace {

// A minimal reader of the text exposition format, written from the format's description: it is the
// test's independent view of what render() produced.
struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    std::string value;
};
struct Exposition {
    std::map<std::string, std::string> help;  // family -> help text
    std::map<std::string, std::string> type;  // family -> type
    std::vector<Sample> samples;              // in order
    std::vector<std::string> errors;
};

std::string unescape_label(std::string_view v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) {
            char n = v[++i];
            out += n == 'n' ? '\n' : n;
        } else {
            out += v[i];
        }
    }
    return out;
}

Sample parse_sample(const std::string& line, std::vector<std::string>& errors) {
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
            size_t eq = line.find('=', i);
            if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
                errors.push_back("bad label in: " + line);
                return s;
            }
            std::string label = line.substr(i, eq - i);
            size_t j = eq + 2;
            std::string raw;
            while (j < line.size() && line[j] != '"') {
                if (line[j] == '\\' && j + 1 < line.size()) raw += line[j++];
                raw += line[j++];
            }
            s.labels[label] = unescape_label(raw);
            i = j + 1;
            if (i < line.size() && line[i] == ',') ++i;
        }
        ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') errors.push_back("no value in: " + line);
    s.value = i < line.size() ? line.substr(i + 1) : "";
    return s;
}

Exposition parse(const std::string& text) {
    Exposition e;
    std::istringstream in(text);
    std::string line;
    if (!text.empty() && text.back() != '\n') e.errors.push_back("text does not end with a newline");
    while (std::getline(in, line)) {
        if (line.rfind("# HELP ", 0) == 0) {
            std::string rest = line.substr(7);
            size_t sp = rest.find(' ');
            std::string family = rest.substr(0, sp);
            if (e.help.count(family)) e.errors.push_back("duplicate HELP " + family);
            e.help[family] = sp == std::string::npos ? "" : rest.substr(sp + 1);
        } else if (line.rfind("# TYPE ", 0) == 0) {
            std::string rest = line.substr(7);
            size_t sp = rest.find(' ');
            std::string family = rest.substr(0, sp);
            if (e.type.count(family)) e.errors.push_back("duplicate TYPE " + family);
            e.type[family] = rest.substr(sp + 1);
        } else if (!line.empty()) {
            e.samples.push_back(parse_sample(line, e.errors));
        }
    }
    return e;
}

double to_double(const std::string& s) {
    if (s == "+Inf") return INFINITY;
    return std::stod(s);
}

// Checks one histogram family of a parsed exposition against the raw observations.
void expect_histogram_matches(const Exposition& e, const std::string& family, const std::vector<double>& bounds,
                              const std::vector<double>& observations) {
    SCOPED_TRACE(family);
    ASSERT_EQ(e.type.count(family), 1u);
    EXPECT_EQ(e.type.at(family), "histogram");
    EXPECT_EQ(e.help.count(family), 1u);
    std::vector<std::pair<double, uint64_t>> buckets;
    std::optional<double> sum;
    std::optional<uint64_t> count;
    for (const Sample& s : e.samples) {
        if (s.name == family + "_bucket") {
            ASSERT_EQ(s.labels.count("le"), 1u);
            buckets.emplace_back(to_double(s.labels.at("le")), std::stoull(s.value));
        } else if (s.name == family + "_sum") {
            sum = std::stod(s.value);
        } else if (s.name == family + "_count") {
            count = std::stoull(s.value);
        }
    }
    ASSERT_EQ(buckets.size(), bounds.size() + 1);
    ASSERT_TRUE(sum.has_value());
    ASSERT_TRUE(count.has_value());
    EXPECT_TRUE(std::isinf(buckets.back().first));
    double expected_sum = 0;
    for (double v : observations) expected_sum += v;
    for (size_t i = 0; i < buckets.size(); ++i) {
        double le = buckets[i].first;
        if (i < bounds.size()) {
            EXPECT_EQ(le, bounds[i]);  // the le text reads back to the exact bound
        }
        if (i > 0) {
            EXPECT_LT(buckets[i - 1].first, le);
            EXPECT_LE(buckets[i - 1].second, buckets[i].second) << "buckets must be cumulative";
        }
        uint64_t expected = 0;
        for (double v : observations) expected += v <= le ? 1 : 0;
        EXPECT_EQ(buckets[i].second, expected) << "le=" << le;
    }
    EXPECT_EQ(*count, observations.size());
    EXPECT_EQ(buckets.back().second, observations.size());
    EXPECT_NEAR(*sum, expected_sum, 1e-9 * std::max(1.0, std::abs(expected_sum)));
}

TEST(PrometheusTextTest, NumbersReadBackExactly) {
    EXPECT_EQ(format_number(1.0), "1");
    EXPECT_EQ(format_number(0.005), "0.005");
    EXPECT_EQ(format_number(INFINITY), "+Inf");
    EXPECT_EQ(format_number(-INFINITY), "-Inf");
    EXPECT_EQ(format_number(NAN), "NaN");
    std::mt19937_64 rng(3);
    for (int i = 0; i < 1000; ++i) {
        double v = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(rng() % 80) - 40);
        EXPECT_EQ(std::strtod(format_number(v).c_str(), nullptr), v);
    }
}

TEST(PrometheusTextTest, EscapesLabelValuesAndHelp) {
    EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    EXPECT_EQ(escape_help("x\\y\nz\""), "x\\\\y\\nz\"");
}

TEST(HistogramTest, RenderedBucketsAreCumulativeAndMatchObservations) {
    std::vector<double> bounds = {0.01, 0.1, 0.5, 1, 2.5};
    Histogram h("hichat_test_seconds", "Test.", bounds);
    std::vector<double> observations = {0.01, 0.1, 2.5, 0.0, -1.0, 100.0};  // boundaries count as <= le
    std::mt19937 rng(11);
    for (int i = 0; i < 500; ++i) observations.push_back(std::exponential_distribution<double>(2.0)(rng));
    for (double v : observations) h.observe(v);
    h.observe(NAN);  // ignored
    std::string text;
    h.render(text);
    Exposition e = parse(text);
    EXPECT_TRUE(e.errors.empty()) << e.errors.front();
    expect_histogram_matches(e, "hichat_test_seconds", bounds, observations);
}

TEST(HistogramTest, EmptyHistogramRendersZeros) {
    Histogram h("hichat_empty", "Empty.", {1, 2});
    std::string text;
    h.render(text);
    Exposition e = parse(text);
    expect_histogram_matches(e, "hichat_empty", {1, 2}, {});
}

TEST(MetricsTest, RendersEveryFamilyWithHeadersAndPrefix) {
    Metrics m;
    m.count_request("/v1/chat/completions", 200);
    m.count_request("/v1/chat/completions", 200);
    m.count_request("/v1/chat/completions", 429);
    m.count_request("/v1/models", 200);
    m.count_request("we\"ird\\end\npoint", 404);
    Exposition e = parse(m.render());
    EXPECT_TRUE(e.errors.empty()) << e.errors.front();

    for (const Sample& s : e.samples) {
        EXPECT_EQ(s.name.rfind("hichat_", 0), 0u) << s.name;
        std::string family = s.name;
        for (std::string suffix : {"_bucket", "_sum", "_count"}) {
            if (!e.type.count(family) && family.size() > suffix.size() &&
                family.compare(family.size() - suffix.size(), suffix.size(), suffix) == 0) {
                family.resize(family.size() - suffix.size());
            }
        }
        EXPECT_EQ(e.type.count(family), 1u) << "no TYPE for " << s.name;
        EXPECT_EQ(e.help.count(family), 1u) << "no HELP for " << s.name;
    }
    EXPECT_EQ(e.type.at("hichat_requests_total"), "counter");
    std::map<std::pair<std::string, std::string>, std::string> requests;
    for (const Sample& s : e.samples) {
        if (s.name == "hichat_requests_total") requests[{s.labels.at("endpoint"), s.labels.at("code")}] = s.value;
    }
    EXPECT_EQ(requests.size(), 4u);
    EXPECT_EQ((requests[{"/v1/chat/completions", "200"}]), "2");
    EXPECT_EQ((requests[{"/v1/chat/completions", "429"}]), "1");
    EXPECT_EQ((requests[{"/v1/models", "200"}]), "1");
    EXPECT_EQ((requests[{"we\"ird\\end\npoint", "404"}]), "1");  // escaped and read back
    // Gauges only with a source.
    EXPECT_EQ(e.type.count("hichat_kv_blocks_free"), 0u);
}

TEST(MetricsTest, GaugesComeFromTheCallbackAtScrapeTime) {
    Metrics m;
    int64_t waiting = 3;
    m.set_engine_gauges_source([&] {
        return EngineGauges{.num_requests_waiting = waiting, .num_requests_running = 7,
                            .num_kv_blocks_used = 120, .num_kv_blocks_free = 904};
    });
    auto gauge_values = [&] {
        std::map<std::string, std::string> values;
        Exposition e = parse(m.render());
        for (const Sample& s : e.samples) {
            if (e.type.count(s.name) && e.type.at(s.name) == "gauge") values[s.name] = s.value;
        }
        return values;
    };
    auto v = gauge_values();
    EXPECT_EQ(v["hichat_num_requests_waiting"], "3");
    EXPECT_EQ(v["hichat_num_requests_running"], "7");
    EXPECT_EQ(v["hichat_kv_blocks_used"], "120");
    EXPECT_EQ(v["hichat_kv_blocks_free"], "904");
    waiting = 9;
    EXPECT_EQ(gauge_values()["hichat_num_requests_waiting"], "9");
}

TEST(MetricsTest, StepHistogramsAndTargetMisses) {
    Metrics m;
    m.observe_step(0.004, 0);
    m.observe_step(0.030, 300);
    m.observe_step(0.012, 16);
    m.set_engine_gauges_source([] { return EngineGauges{.itl_target_misses = 4, .ttft_target_misses = 2}; });
    Exposition e = parse(m.render());
    EXPECT_TRUE(e.errors.empty()) << e.errors.front();
    std::map<std::string, std::string> values;
    for (const Sample& s : e.samples) {
        const auto le = s.labels.find("le");
        values[s.name + (le == s.labels.end() ? "" : "{" + le->second + "}")] = s.value;
    }
    EXPECT_EQ(values["hichat_step_duration_seconds_count"], "3");
    EXPECT_EQ(values["hichat_step_duration_seconds_bucket{0.005}"], "1");
    EXPECT_EQ(values["hichat_step_duration_seconds_bucket{0.015}"], "2");
    EXPECT_EQ(values["hichat_step_prefill_tokens_bucket{0}"], "1");
    EXPECT_EQ(values["hichat_step_prefill_tokens_bucket{16}"], "2");
    EXPECT_EQ(values["hichat_step_prefill_tokens_sum"], "316");
    EXPECT_EQ(values["hichat_itl_target_misses_total"], "4");
    EXPECT_EQ(values["hichat_ttft_target_misses_total"], "2");
    EXPECT_EQ(e.type.at("hichat_itl_target_misses_total"), "counter");
}

TEST(MetricsTest, LatencyAndTokenHistogramsAndTotals) {
    Metrics m;
    std::vector<double> ttft, itl, e2e, prompt, generated;
    std::mt19937 rng(5);
    for (int i = 0; i < 200; ++i) {
        double t = std::exponential_distribution<double>(5.0)(rng);
        double l = std::exponential_distribution<double>(50.0)(rng);
        double d = t + 40 * l;
        int64_t p = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
        int64_t g = std::uniform_int_distribution<int64_t>(0, 600)(rng);
        m.observe_time_to_first_token(t);
        m.observe_inter_token_latency(l);
        m.observe_e2e_latency(d);
        m.observe_request_tokens(p, g);
        ttft.push_back(t), itl.push_back(l), e2e.push_back(d);
        prompt.push_back(static_cast<double>(p)), generated.push_back(static_cast<double>(g));
    }
    Exposition e = parse(m.render());
    EXPECT_TRUE(e.errors.empty()) << e.errors.front();
    expect_histogram_matches(e, "hichat_time_to_first_token_seconds", m.time_to_first_token().upper_bounds(), ttft);
    expect_histogram_matches(e, "hichat_inter_token_latency_seconds", m.inter_token_latency().upper_bounds(), itl);
    expect_histogram_matches(e, "hichat_e2e_request_latency_seconds", m.e2e_latency().upper_bounds(), e2e);
    expect_histogram_matches(e, "hichat_request_prompt_tokens", m.request_prompt_tokens().upper_bounds(), prompt);
    expect_histogram_matches(e, "hichat_request_generation_tokens", m.request_generation_tokens().upper_bounds(),
                             generated);
    double total_prompt = 0, total_generated = 0;
    for (double p : prompt) total_prompt += p;
    for (double g : generated) total_generated += g;
    std::map<std::string, std::string> totals;
    for (const Sample& s : e.samples) totals[s.name] = s.value;
    EXPECT_EQ(e.type.at("hichat_prompt_tokens_total"), "counter");
    EXPECT_EQ(totals["hichat_prompt_tokens_total"], std::to_string(static_cast<int64_t>(total_prompt)));
    EXPECT_EQ(totals["hichat_generation_tokens_total"], std::to_string(static_cast<int64_t>(total_generated)));
}

TEST(MetricsTest, ConcurrentUpdatesAreAllCounted) {
    Metrics m;
    constexpr int kThreads = 4, kPerThread = 2000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < kPerThread; ++i) {
                m.count_request("/v1/completions", 200);
                m.observe_e2e_latency(0.3);
                m.observe_request_tokens(2, 1);
                if (i % 500 == 0) (void)m.render();
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(m.requests().value({"/v1/completions", "200"}), uint64_t{kThreads * kPerThread});
    Histogram::Snapshot snap = m.e2e_latency().snapshot();
    EXPECT_EQ(snap.count, uint64_t{kThreads * kPerThread});
    EXPECT_EQ(snap.cumulative_counts.back(), snap.count);
    EXPECT_EQ(m.prompt_tokens().value(), uint64_t{2 * kThreads * kPerThread});
    EXPECT_EQ(m.generation_tokens().value(), uint64_t{kThreads * kPerThread});
}

}  // namespace
}  // namespace hichat::api
