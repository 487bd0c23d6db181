#include "engine/text_matcher.h"

#include <gtest/gtest.h>

namespace hichat::engine {
namespace {

// Feeds `pieces` and returns everything emitted (push results, then flush unless matched).
std::string feed(TextMatcher& m, const std::vector<std::string>& pieces, bool& matched) {
    std::string out;
    matched = false;
    for (const auto& p : pieces) {
        bool hit = false;
        out += m.push(p, hit);
        if (hit) {
            matched = true;
            return out;
        }
    }
    return out + m.flush();
}

TEST(TextMatcher, StopStringAcrossPiecesNeverLeaks) {
    TextMatcher m({"STOP"}, false);
    bool matched;
    bool hit = false;
    EXPECT_EQ(m.push("abc ST", hit), "abc ");  // "ST" could start STOP: held
    EXPECT_FALSE(hit);
    EXPECT_EQ(m.push("O", hit), "");
    EXPECT_EQ(m.push("Pxyz", hit), "");
    EXPECT_TRUE(hit);
    TextMatcher m2({"STOP"}, false);
    EXPECT_EQ(feed(m2, {"ab", "S", "T", "O", "x"}, matched), "abSTOx");
    EXPECT_FALSE(matched);
}

TEST(TextMatcher, EarliestOfSeveralPatternsWins) {
    TextMatcher m({"world", "lo w"}, false);
    bool matched;
    EXPECT_EQ(feed(m, {"hello world"}, matched), "hel");
    EXPECT_TRUE(matched);
}

TEST(TextMatcher, CaseInsensitiveForTheDenyList) {
    TextMatcher m({"Bad Word"}, true);
    bool matched;
    EXPECT_EQ(feed(m, {"this is a BAD", " wOrD indeed"}, matched), "this is a ");
    EXPECT_TRUE(matched);
}

TEST(TextMatcher, NoPatternsPassesEverythingThrough) {
    TextMatcher m;
    bool hit;
    EXPECT_EQ(m.push("anything", hit), "anything");
    EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace hichat::engine
