#include "bench_serve_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <span>
#include <string_view>

#include "bench/arrival_schedule.h"
#include "bench/benchmark_report.h"
#include "bench/completion_request.h"
#include "bench/conversation_runner.h"
#include "bench/load_generator.h"
#include "bench/multi_turn_dataset.h"
#include "bench/multi_turn_transcript.h"
#include "bench/shared_prefix_dataset.h"

namespace hichat::tools {
namespace {

using namespace bench;

enum class Dataset { kRandom, kSharedPrefix, kMultiTurn };

struct BenchServeOptions {
    BenchmarkSettings settings;
    HttpTarget target;
    Dataset dataset = Dataset::kRandom;
    int vocab_size = 256;  // prompt ids are drawn from [0, vocab_size)
    SharedPrefixConfig shared_prefix;
    MultiTurnConfig multi_turn;
    MultiTurnMode multi_turn_mode = MultiTurnMode::kCompletions;
    std::string api_key;
    std::string result_file;      // empty: do not write
    std::string transcript_file;  // multi-turn: one JSON line per turn; empty: do not write
    nlohmann::json extra_body = nullptr;  // --extra-body
};

// One flag per row.
// clang-format off
constexpr FlagSpec kFlags[] = {
    {.name = "url", .value_name = "http://HOST:PORT", .help = "the server to load", .required = true},
    {.name = "model", .value_name = "NAME", .help = "the model name sent in each request", .required = true},
    {.name = "dataset", .value_name = "NAME", .default_value = "random",
     .help = "random | shared-prefix | multi-turn"},
    {.name = "input-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "128",
     .help = "random: prompt ids per request", .min = 1, .max = 1 << 20},
    {.name = "output-len", .kind = FlagKind::kInt, .value_name = "N", .default_value = "128",
     .help = "random: max_tokens of each request (ignore_eos)", .min = 1, .max = 1 << 20},
    {.name = "num-prompts", .kind = FlagKind::kInt, .value_name = "N", .default_value = "100",
     .help = "random: requests to send", .min = 1, .max = 1 << 24},
    {.name = "gsp-num-groups", .kind = FlagKind::kInt, .value_name = "G", .default_value = "64",
     .help = "shared-prefix: groups (distinct system prompts)", .min = 1, .max = 1 << 16},
    {.name = "gsp-prompts-per-group", .kind = FlagKind::kInt, .value_name = "P", .default_value = "16",
     .help = "shared-prefix: prompts per group", .min = 1, .max = 1 << 16},
    {.name = "gsp-system-prompt-len", .kind = FlagKind::kInt, .value_name = "S", .default_value = "2048",
     .help = "shared-prefix: token ids of each group's system prompt", .min = 1, .max = 1 << 20},
    {.name = "gsp-question-len", .kind = FlagKind::kInt, .value_name = "Q", .default_value = "128",
     .help = "shared-prefix: token ids of each prompt's question", .min = 1, .max = 1 << 20},
    {.name = "gsp-output-len", .kind = FlagKind::kInt, .value_name = "O", .default_value = "256",
     .help = "shared-prefix: max_tokens of each request (ignore_eos)", .min = 1, .max = 1 << 20},
    {.name = "mt-num-conversations", .kind = FlagKind::kInt, .value_name = "C", .default_value = "16",
     .help = "multi-turn: conversations", .min = 1, .max = 1 << 16},
    {.name = "mt-num-turns", .kind = FlagKind::kInt, .value_name = "T", .default_value = "10",
     .help = "multi-turn: turns per conversation", .min = 1, .max = 1 << 12},
    {.name = "mt-input-len", .kind = FlagKind::kInt, .value_name = "U", .default_value = "128",
     .help = "multi-turn: words (about tokens) of each user message", .min = 1, .max = 1 << 20},
    {.name = "mt-output-len", .kind = FlagKind::kInt, .value_name = "A", .default_value = "128",
     .help = "multi-turn: max_tokens of each turn (ignore_eos)", .min = 1, .max = 1 << 20},
    {.name = "mt-mode", .value_name = "MODE", .default_value = "completions",
     .help = "multi-turn: completions (history resent as a text prompt to /v1/completions) or responses "
             "(POST /v1/responses with the new message and previous_response_id: the server keeps the history)"},
    {.name = "mt-transcript", .value_name = "FILE",
     .help = "multi-turn: write one JSON line per turn (prompt, answer, usage) to FILE"},
    {.name = "max-concurrency", .kind = FlagKind::kInt, .value_name = "C", .help = "requests in flight at most",
     .min = 1, .max = 1 << 24, .default_note = "every request (multi-turn: conversation) at once"},
    {.name = "request-rate", .value_name = "R|inf", .default_value = "inf",
     .help = "Poisson arrivals at R requests/s (multi-turn: conversations/s); inf: all at once"},
    {.name = "seed", .kind = FlagKind::kUnsigned, .value_name = "S", .help = "seed of the prompts and arrivals",
     .default_note = "0"},
    {.name = "vocab-size", .kind = FlagKind::kInt, .value_name = "V", .default_value = "256",
     .help = "prompt ids are drawn from [0, V)", .min = 1, .max = 1 << 30},
    {.name = "api-key", .value_name = "KEY", .help = "sent as Authorization: Bearer KEY"},
    {.name = "endpoint", .value_name = "PATH", .default_value = "/v1/completions",
     .help = "must accept a /v1/completions body"},
    {.name = "extra-body", .value_name = "JSON",
     .help = "a JSON object whose keys go into every completions body (e.g. a response_format or grammar)"},
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

// The flags that only one dataset reads; giving one with another dataset is an error naming it.
constexpr std::string_view kRandomFlags[] = {"input-len", "output-len", "num-prompts", "vocab-size"};
constexpr std::string_view kSharedPrefixFlags[] = {"gsp-num-groups",        "gsp-prompts-per-group",
                                                   "gsp-system-prompt-len", "gsp-question-len",
                                                   "gsp-output-len",        "vocab-size"};
constexpr std::string_view kMultiTurnFlags[] = {"mt-num-conversations", "mt-num-turns", "mt-input-len",
                                                "mt-output-len",        "mt-mode",      "mt-transcript"};

Result<Dataset> parse_dataset(const CliArgs& flags) {
    const std::string name = flags.get("dataset");
    if (name == "random") return Dataset::kRandom;
    if (name == "shared-prefix") return Dataset::kSharedPrefix;
    if (name == "multi-turn") return Dataset::kMultiTurn;
    return invalid_argument("--dataset must be random, shared-prefix or multi-turn, got '" + name + "'");
}

std::span<const std::string_view> own_flags(Dataset dataset) {
    switch (dataset) {
        case Dataset::kRandom:
            return kRandomFlags;
        case Dataset::kSharedPrefix:
            return kSharedPrefixFlags;
        case Dataset::kMultiTurn:
            return kMultiTurnFlags;
    }
    return {};
}

Status refuse_other_datasets_flags(const CliArgs& flags, Dataset dataset, const std::string& name) {
    const std::span<const std::string_view> own = own_flags(dataset);
    for (Dataset other : {Dataset::kRandom, Dataset::kSharedPrefix, Dataset::kMultiTurn}) {
        for (std::string_view flag : own_flags(other)) {
            if (flags.has(std::string(flag)) && std::find(own.begin(), own.end(), flag) == own.end())
                return invalid_argument("--" + std::string(flag) + " does not apply to --dataset " + name);
        }
    }
    return ok_status();
}

// The flag's value (its table bounds it to int); on error 0, and the first error kept in `first_error`.
int read_int(const CliArgs& flags, const char* name, Status& first_error) {
    auto v = flags.get_int(name);
    if (v.ok()) return static_cast<int>(*v);
    if (first_error.ok()) first_error = v.status();
    return 0;
}

// Fills the dataset's config and the settings that describe its requests (count, lengths, params).
Status parse_dataset_flags(const CliArgs& flags, BenchServeOptions& o) {
    Status err = ok_status();
    BenchmarkSettings& s = o.settings;
    switch (o.dataset) {
        case Dataset::kRandom: {
            const int n = read_int(flags, "num-prompts", err), in = read_int(flags, "input-len", err),
                      out = read_int(flags, "output-len", err);
            HICHAT_RETURN_IF_ERROR(err);
            s.num_prompts = n, s.input_len = in, s.output_len = out;
            return ok_status();
        }
        case Dataset::kSharedPrefix: {
            const int g = read_int(flags, "gsp-num-groups", err),
                      p = read_int(flags, "gsp-prompts-per-group", err),
                      sys = read_int(flags, "gsp-system-prompt-len", err),
                      q = read_int(flags, "gsp-question-len", err),
                      out = read_int(flags, "gsp-output-len", err);
            HICHAT_RETURN_IF_ERROR(err);
            if (int64_t{g} * p > (1 << 24))
                return invalid_argument(
                    "--gsp-num-groups x --gsp-prompts-per-group must be at most 16777216, got " +
                    std::to_string(int64_t{g} * p));
            o.shared_prefix = {.num_groups = g,
                               .prompts_per_group = p,
                               .system_prompt_len = sys,
                               .question_len = q,
                               .vocab_size = o.vocab_size,
                               .seed = s.seed};
            s.num_prompts = g * p, s.input_len = sys + q, s.output_len = out;
            s.dataset_params = {{"gsp_num_groups", g},
                                {"gsp_prompts_per_group", p},
                                {"gsp_system_prompt_len", sys},
                                {"gsp_question_len", q},
                                {"gsp_output_len", out}};
            return ok_status();
        }
        case Dataset::kMultiTurn: {
            const int c = read_int(flags, "mt-num-conversations", err),
                      t = read_int(flags, "mt-num-turns", err), in = read_int(flags, "mt-input-len", err),
                      out = read_int(flags, "mt-output-len", err);
            HICHAT_RETURN_IF_ERROR(err);
            const std::string mode = flags.get("mt-mode");
            if (mode != "completions" && mode != "responses")
                return invalid_argument("--mt-mode must be completions or responses, got '" + mode + "'");
            o.multi_turn_mode = mode == "responses" ? MultiTurnMode::kResponses : MultiTurnMode::kCompletions;
            o.multi_turn = {
                .num_conversations = c, .num_turns = t, .input_len = in, .output_len = out, .seed = s.seed};
            o.transcript_file = flags.get("mt-transcript");
            s.num_prompts = c * t, s.input_len = 0, s.output_len = out;
            s.dataset_params = {{"mt_responses_mode", mode == "responses" ? 1 : 0},
                                {"mt_num_conversations", c},
                                {"mt_num_turns", t},
                                {"mt_input_len", in},
                                {"mt_output_len", out}};
            return ok_status();
        }
    }
    return ok_status();
}

// Requests that run at once: --max-concurrency, else every request (multi-turn: every conversation).
int64_t default_concurrency(const BenchServeOptions& o) {
    return o.dataset == Dataset::kMultiTurn ? o.multi_turn.num_conversations : o.settings.num_prompts;
}

Result<BenchServeOptions> parse_options(const CliArgs& flags) {
    auto dataset = parse_dataset(flags);
    auto rate = parse_rate(flags);
    auto seed = flags.get_optional_u64("seed");
    auto vocab = flags.get_int("vocab-size");
    for (const Status* s : {&dataset.status(), &rate.status(), &seed.status(), &vocab.status()}) {
        HICHAT_RETURN_IF_ERROR(*s);
    }
    HICHAT_RETURN_IF_ERROR(refuse_other_datasets_flags(flags, *dataset, flags.get("dataset")));
    BenchServeOptions o;
    o.dataset = *dataset;
    o.vocab_size = static_cast<int>(*vocab);
    BenchmarkSettings& s = o.settings;
    s.dataset = flags.get("dataset");
    s.seed = seed->value_or(0);
    HICHAT_RETURN_IF_ERROR(parse_dataset_flags(flags, o));
    auto concurrency = flags.get_int("max-concurrency", default_concurrency(o));
    HICHAT_RETURN_IF_ERROR(concurrency.status());
    s.base_url = flags.get("url");
    s.endpoint = flags.get("endpoint");
    s.model = flags.get("model");
    s.max_concurrency = static_cast<int>(*concurrency);
    s.request_rate = *rate;
    auto target = parse_http_target(s.base_url, s.endpoint);
    HICHAT_RETURN_IF_ERROR(target.status());
    o.target = *target;
    o.api_key = flags.get("api-key");
    o.result_file = flags.get("result-file");
    if (const std::string extra = flags.get("extra-body"); !extra.empty()) {
        o.extra_body = nlohmann::json::parse(extra, nullptr, /*allow_exceptions=*/false);
        if (!o.extra_body.is_object()) return invalid_argument("--extra-body must be a JSON object, got '" + extra + "'");
        s.extra_body = o.extra_body.dump();
    }
    return o;
}

LoadRequest id_request(const BenchServeOptions& o, const std::vector<int32_t>& ids) {
    const CompletionParams params{.model = o.settings.model, .num_output_tokens = o.settings.output_len, .extra_body = o.extra_body};
    return {.http_bytes = http_post(o.target, o.api_key, completion_body(params, ids)),
            .num_prompt_tokens = static_cast<int>(ids.size())};
}

// The random and shared-prefix datasets: every request is known before the run.
std::vector<LoadRequest> build_requests(const BenchServeOptions& o) {
    const BenchmarkSettings& s = o.settings;
    std::vector<LoadRequest> requests;
    if (o.dataset == Dataset::kSharedPrefix) {
        for (const SharedPrefixPrompt& p : shared_prefix_prompts(o.shared_prefix))
            requests.push_back(id_request(o, p.ids));
        return requests;
    }
    for (const auto& ids : random_prompts(s.num_prompts, s.input_len, o.vocab_size, s.seed))
        requests.push_back(id_request(o, ids));
    return requests;
}

// The target with its endpoint replaced by /v1/responses (kept after the URL's own path prefix).
HttpTarget responses_target(HttpTarget target) {
    const size_t v1 = target.path.rfind("/v1/");
    target.path = (v1 == std::string::npos ? std::string() : target.path.substr(0, v1)) + "/v1/responses";
    return target;
}

// The multi-turn dataset's next request, built once the previous turn's answer is in.
LoadRequest multi_turn_request(const BenchServeOptions& o, MultiTurnDataset& dataset, int conversation,
                               int turn, const std::vector<RequestOutcome>& earlier) {
    switch (o.multi_turn_mode) {
        case MultiTurnMode::kCompletions: {
            const std::string& answer = turn == 0 ? std::string() : earlier.back().output_text;
            const std::string& prompt = dataset.build_prompt(conversation, turn, answer);
            const CompletionParams params{.model = o.settings.model,
                                          .num_output_tokens = o.multi_turn.output_len, .extra_body = o.extra_body};
            return {.http_bytes = http_post(o.target, o.api_key, completion_text_body(params, prompt)),
                    .num_prompt_tokens = 0,
                    .keep_text = true};
        }
        case MultiTurnMode::kResponses: {
            const std::string& answer = turn == 0 ? std::string() : earlier.back().output_text;
            dataset.build_prompt(conversation, turn, answer);  // the history as text, for the transcript
            const std::string previous = turn == 0 ? std::string() : earlier.back().response_id;
            const CompletionParams params{.model = o.settings.model,
                                          .num_output_tokens = o.multi_turn.output_len, .extra_body = o.extra_body};
            const std::string body = responses_body(params, dataset.user_message(conversation, turn), previous);
            return {.http_bytes = http_post(responses_target(o.target), o.api_key, body),
                    .num_prompt_tokens = 0,
                    .keep_text = true,
                    .responses_events = true};
        }
    }
    return {};
}

// As vLLM does: one unscored request first, so that a wrong URL, model or key stops the run at once.
// The prefix-cache datasets send a probe that is not in the dataset (one token of output), so that it
// does not warm the cache for the first measured request.
Status run_test_request(const BenchServeOptions& o, const std::vector<LoadRequest>& requests) {
    std::fprintf(stderr, "hichat bench serve: initial test request to %s%s\n", o.settings.base_url.c_str(),
                 o.target.path.c_str());
    const CompletionParams params{.model = o.settings.model, .num_output_tokens = 1, .extra_body = o.extra_body};
    LoadRequest probe;
    switch (o.dataset) {
        case Dataset::kRandom:
            probe = requests.front();
            break;
        case Dataset::kSharedPrefix: {
            const auto ids = random_prompts(1, 16, o.vocab_size, ~o.settings.seed).front();
            probe.http_bytes = http_post(o.target, o.api_key, completion_body(params, ids));
            break;
        }
        case Dataset::kMultiTurn:
            if (o.multi_turn_mode == MultiTurnMode::kResponses) {
                probe.http_bytes = http_post(responses_target(o.target), o.api_key, responses_body(params, " test", ""));
                probe.responses_events = true;
            } else {
                probe.http_bytes = http_post(o.target, o.api_key, completion_text_body(params, " test"));
            }
            break;
    }
    auto load = run_load({.target = o.target, .max_concurrency = 1}, {probe}, {0.0});
    HICHAT_RETURN_IF_ERROR(load.status());
    const RequestOutcome& out = load->outcomes[0];
    if (!out.success) return invalid_argument("the initial test request failed: " + out.error);
    return ok_status();
}

// Failures grouped by message, and outcomes that break the one-token-per-chunk assumption.
void print_warnings(const LoadResult& load) {
    std::map<std::string, int> errors;
    int num_chunk_mismatches = 0, num_prompt_mismatches = 0;
    for (const RequestOutcome& o : load.outcomes) {
        if (!o.success) ++errors[o.error];
        if (o.success && o.num_token_chunks != o.num_output_tokens) ++num_chunk_mismatches;
        if (o.success && o.num_prompt_tokens > 0 && o.num_usage_prompt_tokens >= 0 &&
            o.num_usage_prompt_tokens != o.num_prompt_tokens)
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
        std::fprintf(
            stderr,
            "hichat bench serve: warning: %d requests had usage.prompt_tokens != the prompt ids sent\n",
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

Result<LoadResult> run_multi_turn(const BenchServeOptions& o) {
    MultiTurnDataset dataset(o.multi_turn);
    const MultiTurnConfig& mt = o.multi_turn;
    const ConversationLoad plan{.num_conversations = mt.num_conversations,
                                .num_turns = mt.num_turns,
                                .arrivals_s = arrival_times_s({.num_requests = mt.num_conversations,
                                                               .request_rate = o.settings.request_rate,
                                                               .seed = mt.seed})};
    auto load = run_conversations({.target = o.target, .max_concurrency = o.settings.max_concurrency}, plan,
                                  [&](int c, int t, const std::vector<RequestOutcome>& earlier) {
                                      return multi_turn_request(o, dataset, c, t, earlier);
                                  });
    HICHAT_RETURN_IF_ERROR(load.status());
    // Text prompts: their length is what the server counted.
    for (RequestOutcome& out : load->outcomes)
        out.num_prompt_tokens = std::max(0, out.num_usage_prompt_tokens);
    if (!o.transcript_file.empty())
        HICHAT_RETURN_IF_ERROR(write_multi_turn_transcript(o.transcript_file, dataset, *load));
    return load;
}

Result<LoadResult> run_prepared(const BenchServeOptions& o, const std::vector<LoadRequest>& requests) {
    const BenchmarkSettings& s = o.settings;
    const auto arrivals =
        arrival_times_s({.num_requests = s.num_prompts, .request_rate = s.request_rate, .seed = s.seed});
    return run_load({.target = o.target, .max_concurrency = s.max_concurrency}, requests, arrivals);
}

Result<int> run(const CliArgs& flags) {
    auto opts = parse_options(flags);
    HICHAT_RETURN_IF_ERROR(opts.status());
    if (const char* commit = std::getenv("HICHAT_COMMIT")) opts->settings.commit = commit;
    const bool multi_turn = opts->dataset == Dataset::kMultiTurn;
    const std::vector<LoadRequest> requests = multi_turn ? std::vector<LoadRequest>() : build_requests(*opts);
    HICHAT_RETURN_IF_ERROR(run_test_request(*opts, requests));

    const BenchmarkSettings& s = opts->settings;
    std::fprintf(stderr, "hichat bench serve: %s, %d requests, max concurrency %d, request rate %s\n",
                 s.dataset.c_str(), s.num_prompts, s.max_concurrency,
                 s.request_rate > 0 ? std::to_string(s.request_rate).c_str() : "inf");
    auto load = multi_turn ? run_multi_turn(*opts) : run_prepared(*opts, requests);
    HICHAT_RETURN_IF_ERROR(load.status());
    print_warnings(*load);

    const BenchmarkReport report = make_report(*load, multi_turn ? opts->multi_turn.num_turns : 0);
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
            "Datasets: random (prompts of random token ids, exact lengths, no client tokenizer);\n"
            "shared-prefix (SGLang's generated-shared-prefix: groups of token-id prompts that share a\n"
            "system prompt, shuffled); multi-turn (conversations whose every turn resends the history\n"
            "as a text prompt once the previous answer arrived, or chains /v1/responses by\n"
            "previous_response_id with --mt-mode responses; TTFT by turn). The cached share is\n"
            "usage.prompt_tokens_details.cached_tokens over prompt tokens (n/a if not reported).\n"
            "One untimed test request first. Prints a table, then one JSON line (HICHAT_COMMIT from the\n"
            "environment goes into it). Exit 0: at least one request succeeded; 1: none did; 2: bad\n"
            "flags or a failed test request.\n",
        .flags = kFlags,
        .run = bench_serve_main};
    return command;
}

}  // namespace hichat::tools
