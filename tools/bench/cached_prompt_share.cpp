#include "bench/cached_prompt_share.h"

namespace hichat::tools::bench {

void CachedPromptShare::add(const RequestOutcome& o) {
    if (!o.success || o.num_cached_prompt_tokens < 0) return;
    ++num_reporting;
    num_prompt_tokens += o.num_usage_prompt_tokens >= 0 ? o.num_usage_prompt_tokens : o.num_prompt_tokens;
    num_cached_tokens += o.num_cached_prompt_tokens;
}

std::optional<double> CachedPromptShare::share() const {
    if (num_reporting == 0) return std::nullopt;
    if (num_prompt_tokens == 0) return 0.0;
    return static_cast<double>(num_cached_tokens) / static_cast<double>(num_prompt_tokens);
}

CachedPromptShare cached_prompt_share(const std::vector<RequestOutcome>& outcomes) {
    CachedPromptShare s;
    for (const RequestOutcome& o : outcomes) s.add(o);
    return s;
}

}  // namespace hichat::tools::bench
