#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace hichat::sampling {

TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int num_top) {
    CHECK(chosen >= 0 && static_cast<size_t>(chosen) < logits.size()) << "token " << chosen;
    num_top = std::clamp(num_top, 0, kMaxTopLogprobs);
    float max = -std::numeric_limits<float>::infinity();
    for (float v : logits) max = std::max(max, v);
    double sum = 0;
    if (std::isfinite(max)) {
        for (float v : logits) sum += std::isnan(v) ? 0.0 : std::exp(static_cast<double>(v) - max);
    }
    const double lse = std::isfinite(max) ? max + std::log(sum) : max;
    auto logprob = [&](float v) {  // a row with nothing above -inf: every token -inf
        return std::isfinite(lse) ? static_cast<float>(static_cast<double>(v) - lse) : -std::numeric_limits<float>::infinity();
    };

    TokenLogprobs out;
    out.chosen = logprob(logits[static_cast<size_t>(chosen)]);
    // The num_top best (value descending, id ascending) by one pass with a small sorted list.
    auto better = [&](int32_t a, int32_t b) {
        const float va = logits[static_cast<size_t>(a)], vb = logits[static_cast<size_t>(b)];
        return va > vb || (va == vb && a < b);
    };
    int n = 0;
    for (int32_t id = 0; id < static_cast<int32_t>(logits.size()) && num_top > 0; ++id) {
        if (std::isnan(logits[static_cast<size_t>(id)])) continue;
        if (n == num_top && !better(id, out.top_ids[static_cast<size_t>(n - 1)])) continue;
        int at = std::min(n, num_top - 1);
        while (at > 0 && better(id, out.top_ids[static_cast<size_t>(at - 1)])) {
            out.top_ids[static_cast<size_t>(at)] = out.top_ids[static_cast<size_t>(at - 1)];
            --at;
        }
        out.top_ids[static_cast<size_t>(at)] = id;
        n = std::min(n + 1, num_top);
    }
    out.num_top = n;
    for (int i = 0; i < n; ++i) {
        out.top_logprobs[static_cast<size_t>(i)] = logprob(logits[static_cast<size_t>(out.top_ids[static_cast<size_t>(i)])]);
    }
    return out;
}

}  // namespace hichat::sampling
