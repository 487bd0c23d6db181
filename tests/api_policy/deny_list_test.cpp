#include "api/policy/deny_list.h"

#include <gtest/gtest.h>

#include <random>

#include "common/temp_dir.h"

namespace hichat::api {
namespace {

using test_support::TempDir;

std::string lower(std::string s) {
    for (char& c : s) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return s;
}

// Reference: for each phrase, its first case-folded occurrence; the winner ends first, ties -> listed first.
std::optional<std::string> reference_find(const std::vector<std::string>& phrases, const std::string& text) {
    std::string t = lower(text);
    std::optional<std::string> best;
    size_t best_end = std::string::npos;
    for (const std::string& p : phrases) {
        if (p.empty()) continue;
        size_t pos = t.find(lower(p));
        if (pos == std::string::npos) continue;
        size_t end = pos + p.size();
        if (end < best_end) {
            best_end = end;
            best = p;
        }
    }
    return best;
}

TEST(DenyListTest, LoadsFileSkippingCommentsAndBlanks) {
    TempDir dir;
    std::string path = dir.write("deny.txt", "# banned\n\nBadWord\r\n  two words here  \n#x\nümlaut\n");
    auto list = DenyList::load(path);
    ASSERT_TRUE(list.ok()) << list.status().message();
    EXPECT_EQ(list->phrases(), (std::vector<std::string>{"BadWord", "two words here", "ümlaut"}));
}

TEST(DenyListTest, FindsCaseInsensitiveAndReturnsPhraseAsWritten) {
    auto list = DenyList::from_phrases({"BadWord", "two words here"});
    EXPECT_EQ(list.find("this has a badword in it"), "BadWord");
    EXPECT_EQ(list.find("BADWORD"), "BadWord");
    EXPECT_EQ(list.find("so TWO Words HERE it is"), "two words here");
    EXPECT_FALSE(list.find("bad word, two words, here"));
    EXPECT_FALSE(list.find(""));
    EXPECT_FALSE(list.find("badwor"));
}

TEST(DenyListTest, NonAsciiBytesMatchExactly) {
    auto list = DenyList::from_phrases({"\xc3\xbc" "ber"});  // "über"
    EXPECT_EQ(list.find("xx \xc3\xbc" "BER yy"), "\xc3\xbc" "ber");
    EXPECT_FALSE(list.find("\xc3\x9c" "ber"));  // "Über": not ASCII, not folded
}

TEST(DenyListTest, OverlappingPhrasesReportTheEarliestEndingMatch) {
    auto list = DenyList::from_phrases({"hers", "he", "she", "his"});
    // "she" and "he" both end at index 4 of "ushers"; "he" is listed first.
    EXPECT_EQ(list.find("ushers"), "he");
    EXPECT_EQ(list.find("ushers"), reference_find(list.phrases(), "ushers"));
    EXPECT_EQ(list.find("this"), "his");
}

TEST(DenyListTest, EmptyListNeverMatches) {
    DenyList list;
    EXPECT_TRUE(list.empty());
    EXPECT_FALSE(list.find("anything at all"));
    auto list2 = DenyList::from_phrases({"", ""});
    EXPECT_TRUE(list2.empty());
}

TEST(DenyListTest, MatchesBruteForceReferenceOnRandomInputs) {
    std::mt19937 rng(99);
    const std::string alphabet = "abAB c.";
    auto random_string = [&](int min_len, int max_len) {
        int n = std::uniform_int_distribution<int>(min_len, max_len)(rng);
        std::string s;
        for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
        return s;
    };
    for (int round = 0; round < 300; ++round) {
        std::vector<std::string> phrases;
        int num_phrases = std::uniform_int_distribution<int>(1, 8)(rng);
        for (int i = 0; i < num_phrases; ++i) phrases.push_back(random_string(1, 5));
        DenyList list = DenyList::from_phrases(phrases);
        for (int t = 0; t < 20; ++t) {
            std::string text = random_string(0, 40);
            ASSERT_EQ(list.find(text), reference_find(phrases, text)) << "round " << round << " text '" << text << "'";
        }
    }
}

TEST(DenyListTest, MissingFileIsAnErrorNamingIt) {
    TempDir dir;
    std::string path = dir.path() + "/nope.txt";
    auto list = DenyList::load(path);
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.status().code(), StatusCode::kNotFound);
    EXPECT_NE(list.status().message().find(path), std::string::npos);

    std::string nul = dir.write("nul.txt", std::string("ok\nbad\0x\n", 9));
    auto list2 = DenyList::load(nul);
    ASSERT_FALSE(list2.ok());
    EXPECT_NE(list2.status().message().find(nul + ":2"), std::string::npos) << list2.status().message();
}

}  // namespace
}  // namespace hichat::api
