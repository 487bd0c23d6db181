#pragma once

#include "command.h"

namespace hichat::tools {

// `hichat bench serve --url http://HOST:PORT --model NAME [...]`: the serving load generator.
// Sends streamed completions with at most C in flight and Poisson arrivals at --request-rate, and
// reports what `vllm bench serve` reports, with its definitions: a table, then one JSON line (also
// appended to --result-file). Env HICHAT_COMMIT, if set, goes into the JSON. --dataset picks the
// prompts: random (N prompts of input-len random token ids), shared-prefix (groups of token-id
// prompts sharing a system prompt; bench/shared_prefix_dataset.h) or multi-turn (conversations
// resending their text history each turn; bench/multi_turn_dataset.h), the last two also reporting
// the prompt tokens served from the server's prefix cache, multi-turn its TTFT by turn. --endpoint
// must accept a /v1/completions body. Exit 0 when at least one request succeeded, 1 when none did,
// 2 on bad flags or a failed initial test request (wrong URL, model or key).
const Command& bench_serve_command();

}  // namespace hichat::tools
