#include "bench/multi_turn_transcript.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace hichat::tools::bench {

namespace {

nlohmann::ordered_json count_or_null(int count) {
    return count >= 0 ? nlohmann::ordered_json(count) : nlohmann::ordered_json(nullptr);
}

}  // namespace

Status write_multi_turn_transcript(const std::string& path, const MultiTurnDataset& dataset,
                                   const LoadResult& load) {
    std::ofstream out(path, std::ios::trunc);
    const int num_turns = dataset.config().num_turns;
    for (size_t i = 0; i < load.outcomes.size(); ++i) {
        const int c = static_cast<int>(i / num_turns), t = static_cast<int>(i % num_turns);
        const RequestOutcome& o = load.outcomes[i];
        if (dataset.prompt(c, t).empty()) continue;  // never sent: an earlier turn failed
        const nlohmann::ordered_json line = {{"conversation", c},
                                             {"turn", t},
                                             {"success", o.success},
                                             {"prompt", dataset.prompt(c, t)},
                                             {"answer", o.output_text},
                                             {"prompt_tokens", count_or_null(o.num_usage_prompt_tokens)},
                                             {"cached_tokens", count_or_null(o.num_cached_prompt_tokens)},
                                             {"start_ms", o.start_s * 1e3},
                                             {"ttft_ms", o.ttft_s * 1e3},
                                             {"e2el_ms", o.latency_s * 1e3}};
        out << line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    }
    out.flush();
    if (!out) return invalid_argument("--mt-transcript " + path + ": cannot write");
    return ok_status();
}

}  // namespace hichat::tools::bench
