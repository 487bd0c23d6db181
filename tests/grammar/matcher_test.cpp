// GrammarMatcher on a small multi-byte vocabulary: masks against the brute-force reference,
// EOS only in accepting states, rejected tokens leave the state unchanged, rollback.
#include <random>

#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "mask_support.h"

namespace hichat::grammar {
namespace {

std::shared_ptr<const TokenizerInfo> small_vocab() {
    std::vector<std::string> t = {"{", "}", "\"", "\":", ",\"", "a", "b", "ab", "\"a\"", "1", "12", "0", "-",
                                  "true", "tr", "ue", "null", "[", "]", ",", ":", " ", "\":\"", "\"}", "}}",
                                  "\xc3", "\xa9", "\xc3\xa9", "\\", "n", "<eos>", "<pad>"};
    for (char c = ' '; c <= '~'; ++c) t.push_back(std::string(1, c));  // no dead ends for lack of a byte
    return TokenizerInfo::create(t, {30}, {31}, 140).value();
}

TEST(GrammarMatcher, MaskEqualsBruteForceAlongRandomWalks) {
    auto vocab = small_vocab();
    auto g = compile_json_schema(R"({"type":"object","properties":{"a":{"type":"string","maxLength":4},
        "b":{"type":"array","items":{"type":"integer"}},"ab":{"enum":[true,null]}},"required":["a"]})");
    ASSERT_TRUE(g.ok()) << g.status().message();
    std::mt19937 rng(7);
    int states = 0;
    for (int walk = 0; walk < 40; ++walk) {
        GrammarMatcher m(g.value(), vocab);
        std::string text;
        for (int step = 0; step < 30; ++step) {
            std::vector<uint32_t> bits(vocab->mask_words() + 1, 0xFFFFFFFFu);
            m.fill_next_token_bitmask(bits);
            const auto ref = test::brute_force_mask(m);
            ASSERT_EQ(std::vector<uint32_t>(bits.begin(), bits.begin() + ref.size()), ref) << "walk " << walk << " step " << step;
            EXPECT_EQ(bits.back(), 0u);  // words past the vocabulary are cleared
            EXPECT_FALSE((bits[0] >> 31) & 1);  // <pad> is special
            ++states;
            const auto ids = test::allowed_ids(ref, vocab->num_tokens());
            ASSERT_FALSE(ids.empty()) << "dead end after: " << text;
            const int32_t pick = ids[rng() % ids.size()];
            ASSERT_TRUE(m.accept_token(pick));
            if (!vocab->is_eos(pick)) text += vocab->token_bytes(pick);
            if (m.is_terminated()) break;
        }
    }
    EXPECT_GT(states, 200);
}

TEST(GrammarMatcher, EosOnlyWhenAcceptingAndRejectionsLeaveStateUnchanged) {
    auto vocab = small_vocab();
    auto g = compile_regex("ab(ab)?");
    ASSERT_TRUE(g.ok());
    GrammarMatcher m(g.value(), vocab);
    EXPECT_FALSE(m.accept_token(30));  // EOS before anything
    EXPECT_TRUE(m.accept_token(5));    // a
    EXPECT_FALSE(m.accept_token(5));   // a again: refused
    EXPECT_FALSE(m.is_accepting());
    EXPECT_TRUE(m.accept_token(6));    // b
    EXPECT_TRUE(m.is_accepting());
    EXPECT_FALSE(m.is_terminated());
    EXPECT_TRUE(m.accept_token(7));    // ab
    EXPECT_TRUE(m.is_terminated());    // nothing can follow
    EXPECT_TRUE(m.accept_token(30));
    std::vector<uint32_t> bits(vocab->mask_words());
    m.fill_next_token_bitmask(bits);
    EXPECT_EQ(bits, std::vector<uint32_t>(bits.size(), 0));
}

TEST(GrammarMatcher, RollbackRestoresEarlierStates) {
    auto vocab = small_vocab();
    auto g = compile_json_schema(R"({"type":"array","items":{"type":"integer"}})");
    ASSERT_TRUE(g.ok());
    GrammarMatcher m(g.value(), vocab, MatcherOptions{3});
    std::vector<uint32_t> at_start(vocab->mask_words()), after(vocab->mask_words());
    m.fill_next_token_bitmask(at_start);
    ASSERT_TRUE(m.accept_token(17));  // [
    ASSERT_TRUE(m.accept_token(10));  // 12
    ASSERT_TRUE(m.accept_token(19));  // ,
    ASSERT_TRUE(m.accept_token(9));   // 1
    EXPECT_EQ(m.num_rollback_available(), 3);
    EXPECT_FALSE(m.rollback(4));
    ASSERT_TRUE(m.rollback(2));       // back to "[12"
    ASSERT_TRUE(m.accept_token(18));  // ]
    EXPECT_TRUE(m.is_accepting());
    m.reset();
    m.fill_next_token_bitmask(after);
    EXPECT_EQ(at_start, after);
}

TEST(GrammarMatcher, EmptyLanguageAllowsNothing) {
    auto g = compile_json_schema("false");
    ASSERT_TRUE(g.ok());
    auto vocab = small_vocab();
    GrammarMatcher m(g.value(), vocab);
    std::vector<uint32_t> bits(vocab->mask_words());
    m.fill_next_token_bitmask(bits);
    EXPECT_EQ(bits, std::vector<uint32_t>(bits.size(), 0));
    EXPECT_FALSE(m.is_accepting());
}

}  // namespace
}  // namespace hichat::grammar
