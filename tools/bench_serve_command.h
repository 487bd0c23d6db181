#pragma once
#include <string>
#include <vector>

namespace hichat::tools {
// `hichat bench serve --url http://HOST:PORT --model NAME [--input-len 128] [--output-len 128]
//  [--num-prompts 100] [--max-concurrency N] [--request-rate inf] [--seed 0] [--vocab-size 256]
//  [--api-key KEY] [--endpoint /v1/completions] [--result-file FILE]`: the serving load generator.
// Sends N streamed completions whose prompts are input-len random token ids, with at most C in flight
// and Poisson arrivals at --request-rate, and reports what `vllm bench serve` reports, with its
// definitions: a table, then one JSON line (also appended to --result-file). Env HICHAT_COMMIT, if
// set, goes into the JSON. Prompts are arrays of token ids (exact lengths, no client tokenizer), so
// --endpoint must accept a /v1/completions body. Exit 0 when at least one request succeeded, 1 when
// none did, 2 on bad flags or a failed initial test request (wrong URL, model or key).
int bench_serve_main(const std::vector<std::string>& args);

inline constexpr const char* kBenchServeUsage =
    "  bench serve --url http://HOST:PORT --model NAME [--input-len N] [--output-len N] [--num-prompts N]\n"
    "              [--max-concurrency C] [--request-rate R|inf] [--seed S] [--vocab-size V] [--api-key KEY]\n"
    "              [--endpoint /v1/completions] [--result-file FILE]\n";
}  // namespace hichat::tools
