#pragma once

#include "command.h"

namespace hichat::tools {

// `hichat bench serve --url http://HOST:PORT --model NAME [...]`: the serving load generator.
// Sends N streamed completions whose prompts are input-len random token ids, with at most C in flight
// and Poisson arrivals at --request-rate, and reports what `vllm bench serve` reports, with its
// definitions: a table, then one JSON line (also appended to --result-file). Env HICHAT_COMMIT, if
// set, goes into the JSON. Prompts are arrays of token ids (exact lengths, no client tokenizer), so
// --endpoint must accept a /v1/completions body. Exit 0 when at least one request succeeded, 1 when
// none did, 2 on bad flags or a failed initial test request (wrong URL, model or key).
const Command& bench_serve_command();

}  // namespace hichat::tools
