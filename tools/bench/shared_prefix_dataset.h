// The shared-prefix dataset (SGLang's "generated-shared-prefix"): num_groups groups of
// prompts_per_group prompts; every prompt of a group starts with the group's system prompt of
// system_prompt_len token ids and ends with its own question of question_len ids. All ids are drawn
// from one seeded generator, so a seed gives the same prompts on every machine; the prompts are then
// shuffled by the same generator, so that one group's prompts do not arrive back to back.
#pragma once

#include <cstdint>
#include <vector>

namespace hichat::tools::bench {

struct SharedPrefixConfig {
    int num_groups = 64;           // distinct system prompts
    int prompts_per_group = 16;    // questions per system prompt
    int system_prompt_len = 2048;  // token ids shared by a group
    int question_len = 128;        // token ids of each prompt's own question
    int vocab_size = 256;          // ids are drawn from [0, vocab_size)
    uint64_t seed = 0;
};

struct SharedPrefixPrompt {
    int group = 0;             // which system prompt it starts with
    std::vector<int32_t> ids;  // [system_prompt_len + question_len]
};

// [num_groups * prompts_per_group] prompts in their (shuffled) sending order.
std::vector<SharedPrefixPrompt> shared_prefix_prompts(const SharedPrefixConfig& config);

}  // namespace hichat::tools::bench
