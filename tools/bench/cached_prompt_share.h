// CachedPromptShare: the share of prompt tokens the server says it served from its prefix cache,
// sum(usage.prompt_tokens_details.cached_tokens) / sum(prompt tokens), over the successful requests
// whose usage carried cached_tokens. A server that never reports the field has no share ("n/a").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bench/request_outcome.h"

namespace hichat::tools::bench {

struct CachedPromptShare {
    int num_reporting = 0;          // successful requests whose usage had cached_tokens
    int64_t num_prompt_tokens = 0;  // their prompt tokens (usage.prompt_tokens, else as sent)
    int64_t num_cached_tokens = 0;  // their cached_tokens

    // Counts `outcome` if it succeeded and reported cached_tokens.
    void add(const RequestOutcome& outcome);
    // cached / prompt tokens in [0, 1]; nullopt when no request reported cached_tokens.
    std::optional<double> share() const;
};

CachedPromptShare cached_prompt_share(const std::vector<RequestOutcome>& outcomes);

}  // namespace hichat::tools::bench
