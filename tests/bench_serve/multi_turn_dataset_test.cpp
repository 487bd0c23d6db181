// The multi-turn dataset: user messages are seeded and sized; each turn's prompt extends the last.
#include "bench/multi_turn_dataset.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace hichat::tools::bench {
namespace {

const MultiTurnConfig kConfig{
    .num_conversations = 3, .num_turns = 4, .input_len = 12, .output_len = 5, .seed = 7};

int num_words(const std::string& text) {
    std::istringstream in(text);
    std::string w;
    int n = 0;
    while (in >> w) ++n;
    return n;
}

TEST(MultiTurnDataset, UserMessagesHaveInputLenWordsEachWithItsLeadingSpace) {
    const MultiTurnDataset d(kConfig);
    std::set<std::string> distinct;
    for (int c = 0; c < 3; ++c) {
        for (int t = 0; t < 4; ++t) {
            const std::string& m = d.user_message(c, t);
            EXPECT_EQ(num_words(m), 12) << m;
            ASSERT_FALSE(m.empty());
            EXPECT_EQ(m[0], ' ');
            EXPECT_EQ(m.find("  "), std::string::npos) << m;
            distinct.insert(m);
        }
    }
    EXPECT_EQ(distinct.size(), 12u);
}

TEST(MultiTurnDataset, SeededAndDeterministic) {
    const MultiTurnDataset a(kConfig), b(kConfig);
    for (int c = 0; c < 3; ++c)
        for (int t = 0; t < 4; ++t) EXPECT_EQ(a.user_message(c, t), b.user_message(c, t));
    MultiTurnConfig other = kConfig;
    other.seed = 8;
    EXPECT_NE(MultiTurnDataset(other).user_message(0, 0), a.user_message(0, 0));
}

TEST(MultiTurnDataset, EachPromptIsThePreviousPromptThenItsAnswerThenTheNewMessage) {
    MultiTurnDataset d(kConfig);
    EXPECT_EQ(d.build_prompt(1, 0, ""), d.user_message(1, 0));
    const std::string answers[] = {" A0", "\nA1\n", " é2"};
    for (int t = 1; t < 4; ++t) {
        const std::string previous = d.prompt(1, t - 1);
        const std::string& p = d.build_prompt(1, t, answers[t - 1]);
        EXPECT_EQ(p, previous + answers[t - 1] + d.user_message(1, t));
        EXPECT_EQ(d.prompt(1, t), p);
    }
    EXPECT_EQ(d.prompt(0, 0), "");  // other conversations are untouched
}

}  // namespace
}  // namespace hichat::tools::bench
