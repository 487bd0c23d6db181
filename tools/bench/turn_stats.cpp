#include "bench/turn_stats.h"

namespace hichat::tools::bench {

std::vector<TurnStats> stats_by_turn(const std::vector<RequestOutcome>& outcomes, int num_turns) {
    if (num_turns < 1) return {};
    std::vector<TurnStats> stats(static_cast<size_t>(num_turns));
    std::vector<std::vector<double>> ttfts_s(static_cast<size_t>(num_turns));
    for (size_t i = 0; i < outcomes.size(); ++i) {
        const RequestOutcome& o = outcomes[i];
        const size_t t = i % static_cast<size_t>(num_turns);
        if (!o.success) {
            ++stats[t].num_failed;
            continue;
        }
        ++stats[t].num_completed;
        ttfts_s[t].push_back(o.ttft_s);
        stats[t].cache.add(o);
    }
    for (size_t t = 0; t < stats.size(); ++t) {
        stats[t].turn = static_cast<int>(t);
        stats[t].ttft = summarize_ms(ttfts_s[t]);
    }
    return stats;
}

}  // namespace hichat::tools::bench
