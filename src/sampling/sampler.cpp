#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

namespace hichat::sampling {
namespace {

// Candidates sorted by probability before falling back to sorting the whole vocabulary for top-p.
constexpr size_t kTopPPartialSort = 2048;

}  // namespace

int32_t argmax(std::span<const float> values) {
    int32_t best = 0;
    for (size_t i = 1; i < values.size(); ++i) {
        if (values[i] > values[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    }
    return best;
}

Sampler::Sampler(const SamplingParams& params, uint64_t fallback_seed)
    : params_(params), rng_(params.seed.value_or(fallback_seed)) {}

bool Sampler::device_samplable() const {
    return params_.repetition_penalty == 1.0f && params_.presence_penalty == 0.0f &&
           params_.frequency_penalty == 0.0f && params_.logit_bias.empty();
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> prompt,
                        std::span<const int32_t> generated) {
    apply_logit_bias(logits);
    apply_penalties(logits, prompt, generated);
    if (params_.is_greedy()) return argmax(logits);
    select_candidates(logits);
    double u = rng_.next_unit();
    double cumulative = 0.0;
    for (const Candidate& c : candidates_) {
        cumulative += c.prob;
        if (u < cumulative) return c.token;
    }
    return candidates_.back().token;  // rounding left u just above the total
}

void Sampler::apply_logit_bias(std::span<float> logits) const {
    for (const TokenBias& b : params_.logit_bias) {
        if (b.token >= 0 && static_cast<size_t>(b.token) < logits.size()) logits[static_cast<size_t>(b.token)] += b.bias;
    }
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const int32_t> prompt,
                              std::span<const int32_t> generated) {
    const auto vocab = static_cast<int32_t>(logits.size());
    if (params_.repetition_penalty != 1.0f) {
        auto penalize = [&](int32_t t) {
            if (t < 0 || t >= vocab) return;
            float& l = logits[static_cast<size_t>(t)];
            l = l > 0 ? l / params_.repetition_penalty : l * params_.repetition_penalty;
        };
        // Each distinct token once, as transformers does (gather, then scatter).
        counts_.clear();
        for (int32_t t : prompt) counts_[t] = 1;
        for (int32_t t : generated) counts_[t] = 1;
        for (const auto& [t, n] : counts_) penalize(t);
    }
    if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
        counts_.clear();
        for (int32_t t : generated) counts_[t]++;
        for (const auto& [t, n] : counts_) {
            if (t < 0 || t >= vocab) continue;
            logits[static_cast<size_t>(t)] -=
                params_.presence_penalty + params_.frequency_penalty * static_cast<float>(n);
        }
    }
}

void Sampler::select_candidates(std::span<const float> logits) {
    const float inv_temperature = 1.0f / params_.temperature;
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    candidates_.clear();
    candidates_.reserve(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        float p = std::exp((logits[i] - max_logit) * inv_temperature);
        if (p > 0.0f) candidates_.push_back({static_cast<int32_t>(i), p});
    }
    auto by_prob = [](const Candidate& a, const Candidate& b) {
        return a.prob > b.prob || (a.prob == b.prob && a.token < b.token);
    };
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < candidates_.size()) {
        std::nth_element(candidates_.begin(), candidates_.begin() + params_.top_k, candidates_.end(), by_prob);
        candidates_.resize(static_cast<size_t>(params_.top_k));
    }
    double total = 0.0;
    for (const Candidate& c : candidates_) total += c.prob;

    if (params_.top_p < 1.0f) {
        // Sort the most likely tokens first; sort everything only if they do not reach top_p.
        size_t num_sorted = std::min(kTopPPartialSort, candidates_.size());
        std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(num_sorted),
                          candidates_.end(), by_prob);
        double cumulative = 0.0, target = params_.top_p * total;
        size_t keep = 0;
        while (keep < num_sorted && cumulative < target) cumulative += candidates_[keep++].prob;
        if (cumulative < target && num_sorted < candidates_.size()) {
            std::sort(candidates_.begin(), candidates_.end(), by_prob);
            while (keep < candidates_.size() && cumulative < target) cumulative += candidates_[keep++].prob;
        }
        candidates_.resize(std::max<size_t>(keep, 1));
    }
    if (params_.min_p > 0.0f) {
        // The most likely token has unnormalised probability 1 (its logit is the maximum).
        float threshold = params_.min_p;
        std::erase_if(candidates_, [&](const Candidate& c) { return c.prob < threshold; });
    }
    total = 0.0;
    for (const Candidate& c : candidates_) total += c.prob;
    for (Candidate& c : candidates_) c.prob = static_cast<float>(c.prob / total);
}

}  // namespace hichat::sampling
