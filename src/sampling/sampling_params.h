// SamplingParams: how one request turns logits into its next token. Validated once at the API edge.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"

namespace hichat::sampling {

// One entry of OpenAI's logit_bias: added to the token's raw logit before anything else.
struct TokenBias {
    int32_t token = 0;
    float bias = 0.0f;                 // [-100, 100]: -100 bans the token, +100 forces it in practice
};

struct SamplingParams {
    float temperature = 1.0f;          // 0: greedy (argmax)
    int top_k = 0;                     // 0: off
    float top_p = 1.0f;                // 1: off
    float min_p = 0.0f;                // 0: off; keeps tokens with p >= min_p * p_max
    float repetition_penalty = 1.0f;   // 1: off; divides positive / multiplies negative logits of seen tokens
    float presence_penalty = 0.0f;     // subtracted once from logits of tokens already generated
    float frequency_penalty = 0.0f;    // subtracted per occurrence in the generated tokens
    std::optional<uint64_t> seed;      // fixed seed: reproducible sampling
    std::vector<TokenBias> logit_bias; // empty: off; ids outside the vocabulary are ignored by the sampler

    bool is_greedy() const { return temperature == 0.0f; }
    // Greedy with no penalties and no bias: the next token is the argmax of the raw logits.
    bool is_plain_greedy() const {
        return is_greedy() && repetition_penalty == 1.0f && presence_penalty == 0.0f && frequency_penalty == 0.0f &&
               logit_bias.empty();
    }
    // Errors name the field: temperature in [0, 100], top_p in (0, 1], top_k >= 0, min_p in [0, 1],
    // repetition_penalty in (0, 10], presence/frequency penalties in [-2, 2], logit_bias ids >= 0 with
    // biases in [-100, 100]; NaN is never valid.
    Status validate() const;
};

}  // namespace hichat::sampling
