// Sampler: one sequence's token chooser. Owns that sequence's random state; one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling_params.h"

namespace hichat::sampling {

class Sampler {
public:
    // Seeds from params.seed, else from `fallback_seed` (e.g. a request id mixed with the clock).
    Sampler(const SamplingParams& params, uint64_t fallback_seed);

    // Picks the next token from logits [vocab] (modified in place). `prompt` and `generated` are the
    // sequence's tokens so far (for penalties). Order: logit_bias, penalties, temperature, top-k, top-p,
    // min-p.
    int32_t sample(std::span<float> logits, std::span<const int32_t> prompt, std::span<const int32_t> generated);

    // True when the device sampler (cuda::sample_rows) can stand in for sample(): no penalties, which
    // need the token history, and no logit_bias (applied on the host only). Greedy settings count too
    // (the device takes the argmax).
    bool device_samplable() const;

    // The next uniform in [0, 1) from this sequence's Rng: the u that sample() would draw at this point.
    // Drawing it for the device path keeps the sequence's random stream where the CPU path would leave it
    // (call it once per non-greedy step, as sample() draws once per non-greedy step).
    double next_unit() { return rng_.next_unit(); }

private:
    void apply_logit_bias(std::span<float> logits) const;
    void apply_penalties(std::span<float> logits, std::span<const int32_t> prompt,
                         std::span<const int32_t> generated);
    // Fills candidates_ with the tokens that survive top-k/top-p/min-p, probabilities normalised.
    void select_candidates(std::span<const float> logits);

    SamplingParams params_;
    Rng rng_;
    struct Candidate {
        int32_t token;
        float prob;
    };
    std::vector<Candidate> candidates_;              // scratch, reused per call
    std::unordered_map<int32_t, int32_t> counts_;    // scratch: generated-token counts
};

// Index of the largest value; the lowest index among equals.
int32_t argmax(std::span<const float> values);

}  // namespace hichat::sampling
