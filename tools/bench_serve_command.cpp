#include "bench_serve_command.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "bench/arrival_schedule.h"
#include "bench/benchmark_report.h"
#include "bench/completion_request.h"
#include "bench/load_generator.h"
#include "cli_args.h"

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

Result<double> parse_rate(const CliArgs& flags) {
    if (flags.get("request-rate", "inf") == "inf") return 0.0;
    return flags.get_double("request-rate", 0, 1e-6, 1e9);
}

Result<BenchServeOptions> parse_options(const std::vector<std::string>& args) {
    auto flags = CliArgs::parse(args,
                                {"url", "model", "input-len", "output-len", "num-prompts", "max-concurrency",
                                 "request-rate", "seed", "vocab-size", "api-key", "endpoint", "result-file"},
                                {});
    HICHAT_RETURN_IF_ERROR(flags.status());
    auto url = flags->required("url");
    auto model = flags->required("model");
    auto input_len = flags->get_int("input-len", 128, 1, 1 << 20);
    auto output_len = flags->get_int("output-len", 128, 1, 1 << 20);
    auto num_prompts = flags->get_int("num-prompts", 100, 1, 1 << 24);
    auto rate = parse_rate(*flags);
    auto seed = flags->get_optional_u64("seed");
    auto vocab = flags->get_int("vocab-size", 256, 1, 1 << 30);
    for (const Status* s : {&url.status(), &model.status(), &input_len.status(), &output_len.status(),
                            &num_prompts.status(), &rate.status(), &seed.status(), &vocab.status()}) {
        HICHAT_RETURN_IF_ERROR(*s);
    }
    auto concurrency = flags->get_int("max-concurrency", *num_prompts, 1, 1 << 24);
    HICHAT_RETURN_IF_ERROR(concurrency.status());
    BenchServeOptions o;
    BenchmarkSettings& s = o.settings;
    s.base_url = *url;
    s.endpoint = flags->get("endpoint", "/v1/completions");
    s.model = *model;
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
    o.api_key = flags->get("api-key", "");
    o.result_file = flags->get("result-file", "");
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

Result<int> run(const std::vector<std::string>& args) {
    auto opts = parse_options(args);
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

}  // namespace

int bench_serve_main(const std::vector<std::string>& args) {
    Result<int> code = run(args);
    if (code.ok()) return *code;
    std::fprintf(stderr, "hichat bench serve: %s\n", code.status().message().c_str());
    return 2;
}

}  // namespace hichat::tools
