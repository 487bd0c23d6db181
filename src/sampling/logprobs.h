// TokenLogprobs: one step's log-probabilities for a sequence that asked for them (OpenAI `logprobs`):
// the chosen token's and the most likely tokens'. The rule, on every path (the CPU sampler, the
// runner's host argmax, the CUDA kernel): log_softmax over the whole vocabulary of the logits as the
// model gave them, before penalties, logit_bias, temperature and top-k/top-p/min-p, so that a token's
// logprob does not depend on how it was sampled. The top list is sorted by logprob, descending, equal
// values by lower token id; -inf stays -inf here (the API writes it as -9999). NaN logits count as
// absent: outside the sum and never listed.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace hichat::sampling {

inline constexpr int kMaxTopLogprobs = 20;  // OpenAI's top_logprobs limit

struct TokenLogprobs {
    float chosen = 0;  // of the sampled token
    int num_top = 0;   // entries of the top list
    std::array<int32_t, kMaxTopLogprobs> top_ids{};
    std::array<float, kMaxTopLogprobs> top_logprobs{};
};

// `logits` [vocab] as the model gave them; num_top in [0, kMaxTopLogprobs] (more is clamped).
TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int num_top);

}  // namespace hichat::sampling
