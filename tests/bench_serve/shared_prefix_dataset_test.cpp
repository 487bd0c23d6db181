// The shared-prefix dataset: shapes, seeding, and that a group's prefix really is shared.
#include "bench/shared_prefix_dataset.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace hichat::tools::bench {
namespace {

const SharedPrefixConfig kConfig{.num_groups = 5,
                                 .prompts_per_group = 7,
                                 .system_prompt_len = 40,
                                 .question_len = 9,
                                 .vocab_size = 256,
                                 .seed = 11};

std::vector<int32_t> head(const std::vector<int32_t>& ids, int n) { return {ids.begin(), ids.begin() + n}; }
std::vector<int32_t> tail(const std::vector<int32_t>& ids, int n) { return {ids.end() - n, ids.end()}; }

TEST(SharedPrefixDataset, CountsAndLengths) {
    const auto prompts = shared_prefix_prompts(kConfig);
    ASSERT_EQ(prompts.size(), 35u);
    std::map<int, int> per_group;
    for (const auto& p : prompts) {
        EXPECT_EQ(p.ids.size(), 49u);
        for (int32_t id : p.ids) {
            EXPECT_GE(id, 0);
            EXPECT_LT(id, 256);
        }
        ++per_group[p.group];
    }
    ASSERT_EQ(per_group.size(), 5u);
    for (const auto& [group, count] : per_group) {
        EXPECT_GE(group, 0);
        EXPECT_LT(group, 5);
        EXPECT_EQ(count, 7) << "group " << group;
    }
}

TEST(SharedPrefixDataset, SystemPromptSharedWithinAGroupAndDistinctAcrossGroups) {
    const auto prompts = shared_prefix_prompts(kConfig);
    std::map<int, std::vector<int32_t>> system_of_group;
    std::set<std::vector<int32_t>> questions;
    for (const auto& p : prompts) {
        const auto system = head(p.ids, kConfig.system_prompt_len);
        auto [it, inserted] = system_of_group.emplace(p.group, system);
        if (!inserted) {
            EXPECT_EQ(it->second, system) << "group " << p.group;
        }
        questions.insert(tail(p.ids, kConfig.question_len));
    }
    std::set<std::vector<int32_t>> distinct_systems;
    for (const auto& [group, system] : system_of_group) distinct_systems.insert(system);
    EXPECT_EQ(distinct_systems.size(), 5u);
    // Every question is its own, so no two prompts are the same beyond the system prompt.
    EXPECT_EQ(questions.size(), 35u);
}

TEST(SharedPrefixDataset, SeededAndDeterministic) {
    const auto a = shared_prefix_prompts(kConfig);
    const auto b = shared_prefix_prompts(kConfig);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].group, b[i].group);
        EXPECT_EQ(a[i].ids, b[i].ids);
    }
    SharedPrefixConfig other = kConfig;
    other.seed = 12;
    EXPECT_NE(shared_prefix_prompts(other)[0].ids, a[0].ids);
}

TEST(SharedPrefixDataset, IdsAreTheSeededGeneratorsDrawsInOrder) {
    // std::mt19937_64's sequence is fixed by the standard, so the prompts are the same everywhere:
    // group 0's system prompt is the first draws, then group 0's first question.
    std::mt19937_64 rng(kConfig.seed);
    std::vector<int32_t> expected(static_cast<size_t>(kConfig.system_prompt_len + kConfig.question_len));
    for (int32_t& id : expected) id = static_cast<int32_t>(rng() % 256);
    const auto prompts = shared_prefix_prompts(kConfig);
    int num_found = 0;
    for (const auto& p : prompts) num_found += p.ids == expected;
    EXPECT_EQ(num_found, 1);
}

TEST(SharedPrefixDataset, ShuffledSoGroupsDoNotArriveBackToBack) {
    const auto prompts = shared_prefix_prompts(kConfig);
    int num_group_changes = 0;
    for (size_t i = 1; i < prompts.size(); ++i) num_group_changes += prompts[i].group != prompts[i - 1].group;
    // In generation order there would be 4 changes (5 blocks of 7).
    EXPECT_GT(num_group_changes, 10);
}

}  // namespace
}  // namespace hichat::tools::bench
