#include "bench_serve_command.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "bench/arrival_schedule.h"
#include "bench/benchmark_report.h"
#include "bench/completion_request.h"
#include "bench/load_generator.h"

namespace hichat::tools {
namespace {

using namespace bench;

struct BenchServeOptions {
    BenchmarkSettings settings;
    HttpTarget target;
    int vocab_size = 256;  // prompt ids are drawn from [0, vocab_size)
    std::string api_key;
    std::string result_file;  // empty: do not write
};

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "url", .value_name = "http://HOST:PORT", .help = "the server to load", .required = true},
    {.name = "model", .value_name = "NAME", .help = "the model name sent in each request", .required = true},
    {.name = "input-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "128",
     .help = "random prompt ids per request", .min = 1, .max = 1 << 20},
    {.name = "output-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "128",
     .help = "max_tokens of each request (ignore_eos)", .min = 1, .max = 1 << 20},
    {.name = "num-prompts", .kind = FlagKind::kInt, .value_name = "N", .default_value = "100",
     .help = "requests to send", .min = 1, .max = 1 << 24},
    {.name = "max-concurrency", .kind = FlagKind::kInt, .value_name = "C", .help = "requests in flight at most",
     .min = 1, .max = 1 << 24, .default_note = "--num-prompts"},
    {.name = "request-rate", .value_name = "R|inf", .default_value = "inf",
     .help = "Poisson arrivals at R requests/s; inf: all at once"},
    {.name = "seed", .kind = FlagKind::kUnsigned, .value_name = "S", .help = "seed of the prompts and arrivals",
     .default_note = "0"},
    {.name = "vocab-size", .kind = FlagKind::kInt, .value_name = "V", .default_value = "256",
     .help = "prompt ids are drawn from [0, V)", .min = 1, .max = 1 << 30},
    {.name = "api-key", .value_name = "KEY", .help = "sent as Authorization: Bearer KEY"},
    {.name = "endpoint", .value_name = "PATH", .default_value = "/v1/completions",
     .help = "must accept a /v1/completions body"},
    {.name = "result-file", .value_name = "FILE", .help = "append the JSON line to FILE"},
};
// clang-format on

Result<double> parse_rate(const CliArgs& flags) {
    const std::string text = flags.get("request-rate");
    if (text == "inf") return 0.0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !(v >= 1e-6 && v <= 1e9)) {
        return invalid_argument("--request-rate must be inf or a number of requests/s in [1e-6, 1e9], got '" +
                                text + "'");
    }
    return v;
}

Result<BenchServeOptions> parse_options(const CliArgs& flags) {
    auto input_len = flags.get_int("input-len");
    auto output_len = flags.get_int("output-len");
    auto num_prompts = flags.get_int("num-prompts");
    auto rate = parse_rate(flags);
    auto seed = flags.get_optional_u64("seed");
    auto vocab = flags.get_int("vocab-size");
    for (const Status* s : {&input_len.status(), &output_len.status(), &num_prompts.status(), &rate.status(),
                            &seed.status(), &vocab.status()}) {
        HICHAT_RETURN_IF_ERROR(*s);
    }
    auto concurrency = flags.get_int("max-concurrency", *num_prompts);
    HICHAT_RETURN_IF_ERROR(concurrency.status());
    BenchServeOptions o;
    BenchmarkSettings& s = o.settings;
    s.base_url = flags.get("url");
    s.endpoint = flags.get("endpoint");
    s.model = flags.get("model");
    s.num_prompts = static_cast<int>(*num_prompts);
    s.input_len = static_cast<int>(*input_len);
    s.output_len = static_cast<int>(*output_len);
    s.max_concurrency = static_cast<int>(*concurrency);
    s.request_rate = *rate;
    s.seed = seed->value_or(0);
    auto target = parse_http_target(s.base_url, s.endpoint);
    HICHAT_RETURN_IF_ERROR(target.status());
    o.target = *target;
    o.vocab_size = static_cast<int>(*vocab);
    o.api_key = flags.get("api-key");
    o.result_file = flags.get("result-file");
    return o;
}

std::vector<LoadRequest> build_requests(const BenchServeOptions& o) {
    const BenchmarkSettings& s = o.settings;
    const CompletionParams params{.model = s.model, .num_output_tokens = s.output_len};
    std::vector<LoadRequest> requests;
    for (const auto& ids : random_prompts(s.num_prompts, s.input_len, o.vocab_size, s.seed)) {
        requests.push_back({.http_bytes = http_post(o.target, o.api_key, completion_body(params, ids)),
                            .num_prompt_tokens = s.input_len});
    }
    return requests;
}

// As vLLM does: one unscored request first, so that a wrong URL, model or key stops the run at once.
Status run_test_request(const BenchServeOptions& o, const LoadRequest& first) {
    std::fprintf(stderr, "hichat bench serve: initial test request to %s%s\n", o.settings.base_url.c_str(),
                 o.target.path.c_str());
    auto load = run_load({.target = o.target, .max_concurrency = 1}, {first}, {0.0});
    HICHAT_RETURN_IF_ERROR(load.status());
    const RequestOutcome& out = load->outcomes[0];
    if (!out.success) return invalid_argument("the initial test request failed: " + out.error);
    return ok_status();
}

// Failures grouped by message, and outcomes that break the one-token-per-chunk assumption.
void print_warnings(const LoadResult& load, int input_len) {
    std::map<std::string, int> errors;
    int num_chunk_mismatches = 0, num_prompt_mismatches = 0;
    for (const RequestOutcome& o : load.outcomes) {
        if (!o.success) ++errors[o.error];
        if (o.success && o.num_token_chunks != o.num_output_tokens) ++num_chunk_mismatches;
        if (o.success && o.num_usage_prompt_tokens >= 0 && o.num_usage_prompt_tokens != input_len)
            ++num_prompt_mismatches;
    }
    for (const auto& [message, count] : errors) {
        std::fprintf(stderr, "hichat bench serve: %d failed: %s\n", count, message.c_str());
    }
    if (num_chunk_mismatches > 0) {
        std::fprintf(stderr,
                     "hichat bench serve: warning: %d requests streamed a number of token chunks other than "
                     "usage.completion_tokens; ITL is per chunk, not per token\n",
                     num_chunk_mismatches);
    }
    if (num_prompt_mismatches > 0) {
        std::fprintf(stderr,
                     "hichat bench serve: warning: %d requests had usage.prompt_tokens != --input-len\n",
                     num_prompt_mismatches);
    }
}

Status append_line(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::app);
    if (!out) return invalid_argument("--result-file " + path + ": cannot open for appending");
    out << text << "\n";
    out.flush();
    if (!out) return invalid_argument("--result-file " + path + ": write failed");
    return ok_status();
}

Result<int> run(const CliArgs& flags) {
    auto opts = parse_options(flags);
    HICHAT_RETURN_IF_ERROR(opts.status());
    if (const char* commit = std::getenv("HICHAT_COMMIT")) opts->settings.commit = commit;
    const std::vector<LoadRequest> requests = build_requests(*opts);
    HICHAT_RETURN_IF_ERROR(run_test_request(*opts, requests.front()));

    const BenchmarkSettings& s = opts->settings;
    const auto arrivals =
        arrival_times_s({.num_requests = s.num_prompts, .request_rate = s.request_rate, .seed = s.seed});
    std::fprintf(stderr, "hichat bench serve: %d requests, max concurrency %d, request rate %s\n",
                 s.num_prompts, s.max_concurrency,
                 s.request_rate > 0 ? std::to_string(s.request_rate).c_str() : "inf");
    auto load = run_load({.target = opts->target, .max_concurrency = s.max_concurrency}, requests, arrivals);
    HICHAT_RETURN_IF_ERROR(load.status());
    print_warnings(*load, s.input_len);

    const BenchmarkReport report = make_report(*load);
    const std::string json_line = report_json(report, s).dump();
    std::printf("%s%s\n", report_table(report, s).c_str(), json_line.c_str());
    std::fflush(stdout);
    if (!opts->result_file.empty()) HICHAT_RETURN_IF_ERROR(append_line(opts->result_file, json_line));
    return report.num_completed > 0 ? 0 : 1;
}

int bench_serve_main(const CliArgs& flags) {
    Result<int> code = run(flags);
    if (code.ok()) return *code;
    std::fprintf(stderr, "hichat bench serve: %s\n", code.status().message().c_str());
    return 2;
}

}  // namespace

const Command& bench_serve_command() {
    static const Command command{
        .name = "bench serve",
        .summary = "load an OpenAI-compatible server with streamed completions, report as vllm bench serve",
        .details =
            "Prompts are arrays of random token ids (exact lengths, no client tokenizer). One untimed test\n"
            "request first. Prints a table, then one JSON line (HICHAT_COMMIT from the environment goes\n"
            "into it). Exit 0: at least one request succeeded; 1: none did; 2: bad flags or a failed\n"
            "test request.\n",
        .flags = kFlags,
        .run = bench_serve_main};
    return command;
}

}  // namespace hichat::tools
