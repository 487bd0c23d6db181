#include "bench/shared_prefix_dataset.h"

#include <random>
#include <utility>

namespace hichat::tools::bench {
namespace {

// Modulo bias is below 2^-40 for any vocabulary we serve; portable across standard libraries, which
// std::uniform_int_distribution and std::shuffle are not.
std::vector<int32_t> random_ids(std::mt19937_64& rng, int num_ids, int vocab_size) {
    std::vector<int32_t> ids(static_cast<size_t>(num_ids));
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab_size));
    return ids;
}

template <typename T>
void shuffle(std::vector<T>& items, std::mt19937_64& rng) {  // Fisher-Yates
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng() % i]);
}

}  // namespace

std::vector<SharedPrefixPrompt> shared_prefix_prompts(const SharedPrefixConfig& config) {
    std::mt19937_64 rng(config.seed);
    std::vector<SharedPrefixPrompt> prompts;
    prompts.reserve(static_cast<size_t>(config.num_groups) * config.prompts_per_group);
    for (int g = 0; g < config.num_groups; ++g) {
        const std::vector<int32_t> system = random_ids(rng, config.system_prompt_len, config.vocab_size);
        for (int p = 0; p < config.prompts_per_group; ++p) {
            SharedPrefixPrompt prompt{.group = g, .ids = system};
            const std::vector<int32_t> question = random_ids(rng, config.question_len, config.vocab_size);
            prompt.ids.insert(prompt.ids.end(), question.begin(), question.end());
            prompts.push_back(std::move(prompt));
        }
    }
    shuffle(prompts, rng);
    return prompts;
}

}  // namespace hichat::tools::bench
