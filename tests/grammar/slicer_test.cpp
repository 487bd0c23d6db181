// The mask fast paths: the slicer (plain-token bitsets + the non-plain trie, TokenizerInfo and
// LexerStates::plain_run) and the per-state mask cache shared by matchers of one grammar, checked
// against the brute-force mask on a vocabulary rich in multi-character plain tokens, for bounded
// strings, patterns, enums, formats and free strings; from one thread and from several at once.
// Also the look-alike path (a state's mask from a similar state's, LexemeDfa::agreeing_depth).
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar/lexer_states.h"
#include "mask_support.h"

namespace hichat::grammar {
namespace {

// Single printable bytes (no dead ends), structural tokens, then seeded random multi-byte tokens
// mixing plain characters (ASCII, é, 😀) with quotes, backslashes, control bytes and partial UTF-8.
std::shared_ptr<const TokenizerInfo> sliced_vocab() {
    std::vector<std::string> t = {"<eos>", "<pad>", "\"", "\":", ",\"", "\"}", "\"]", "\\n", "\\\"", "\\u00e9", "\n"};
    for (char c = ' '; c <= '~'; ++c) t.push_back(std::string(1, c));
    const std::vector<std::string> parts = {"a", "b", "c", "z", "A", " ", "-", "0", "7", "\xc3\xa9", "\xf0\x9f\x98\x80",
                                            "\"", "\\", "\\n", "\xc3", "\xa9", ",", "}", ":", "\t"};
    std::mt19937 rng(42);
    for (int i = 0; i < 600; ++i) {
        std::string s;
        const int n = 1 + static_cast<int>(rng() % 7);
        for (int k = 0; k < n; ++k) s += parts[rng() % parts.size()];
        t.push_back(s);
    }
    return TokenizerInfo::create(t, {0}, {1}).value();
}

TEST(TokenizerInfo, PlainCharsCountsWholeStringCharacters) {
    EXPECT_EQ(TokenizerInfo::plain_chars("abc"), 3);
    EXPECT_EQ(TokenizerInfo::plain_chars("a b~"), 4);
    EXPECT_EQ(TokenizerInfo::plain_chars("\xc3\xa9x"), 2);
    EXPECT_EQ(TokenizerInfo::plain_chars("\xe2\x82\xac"), 1);      // €
    EXPECT_EQ(TokenizerInfo::plain_chars("\xf0\x9f\x98\x80"), 1);  // 😀
    EXPECT_EQ(TokenizerInfo::plain_chars("a\""), -1);
    EXPECT_EQ(TokenizerInfo::plain_chars("\\n"), -1);
    EXPECT_EQ(TokenizerInfo::plain_chars("\n"), -1);
    EXPECT_EQ(TokenizerInfo::plain_chars("\x7f"), -1);
    EXPECT_EQ(TokenizerInfo::plain_chars("\xc3"), -1);              // partial
    EXPECT_EQ(TokenizerInfo::plain_chars("\xa9"), -1);              // continuation alone
    EXPECT_EQ(TokenizerInfo::plain_chars("\xc0\xaf"), -1);          // overlong
    EXPECT_EQ(TokenizerInfo::plain_chars("\xed\xa0\x80"), -1);      // surrogate
    EXPECT_EQ(TokenizerInfo::plain_chars("\xf4\x90\x80\x80"), -1);  // above U+10FFFF

    auto vocab = TokenizerInfo::create({"ab", "\"", "abc", "\xc3\xa9", "<eos>"}, {4}).value();
    EXPECT_EQ(vocab->max_plain_chars(), 3);
    EXPECT_EQ(vocab->plain_tokens_upto(1)[0], 0b01000u);
    EXPECT_EQ(vocab->plain_tokens_upto(2)[0], 0b01001u);
    EXPECT_EQ(vocab->plain_tokens_upto(9)[0], 0b01101u);
    EXPECT_EQ(vocab->non_plain_trie().tokens, std::vector<int32_t>{1});
}

// The lexer state just after the opening quote of a one-string grammar.
int32_t after_quote(LexerStates& ls, const CompiledGrammar& g) {
    std::vector<int32_t> all;
    for (int32_t i = 0; i < g.num_lexemes(); ++i) all.push_back(i);
    return ls.next(ls.start_state(all), '"');
}

TEST(LexerStates, PlainRunFollowsBoundedAndFreeStringsAndRefusesPatterns) {
    auto bounded = compile_json_schema(R"({"type":"string","maxLength":3})").value();
    LexerStates a(*bounded);
    int32_t s = after_quote(a, *bounded);
    EXPECT_EQ(a.plain_run(s, 10), 3);
    s = a.next(s, 'x');
    EXPECT_EQ(a.plain_run(s, 10), 2);
    s = a.next(a.next(s, 0xC3), 0xA9);
    EXPECT_EQ(a.plain_run(s, 10), 1);

    auto free_string = compile_json_schema(R"({"type":"string"})").value();
    LexerStates b(*free_string);
    EXPECT_EQ(b.plain_run(after_quote(b, *free_string), 10), 10);  // a loop: capped

    auto pattern = compile_json_schema(R"({"type":"string","pattern":"^[a-z]+$"})").value();
    LexerStates c(*pattern);
    EXPECT_EQ(c.plain_run(after_quote(c, *pattern), 10), -1);

    auto with_min = compile_json_schema(R"({"type":"string","minLength":2,"maxLength":4})").value();
    LexerStates d(*with_min);
    EXPECT_EQ(d.plain_run(after_quote(d, *with_min), 10), 4);
}

const char* kSlicedSchemas[] = {
    R"({"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false})",
    R"({"type":"array","items":{"type":"string","minLength":2,"maxLength":3},"maxItems":4})",
    R"({"type":"array","items":{"type":"string","pattern":"^[a-c]+-[0-9]$"},"maxItems":3})",
    R"({"type":"array","items":{"enum":["ab","abc d","\u00e9","a\"b"]},"maxItems":4})",
    R"({"type":"object","properties":{"d":{"type":"string","format":"date"},"n":{"type":"string","maxLength":2}},"required":["d","n"]})",
    R"({"type":"object","additionalProperties":{"type":"string","maxLength":4}})",
    R"({"type":"string","pattern":"^.{1,4}$"})",
};

// Random walks over one grammar; every mask is compared with the brute-force one. Returns the
// number of masks compared.
int walk_and_compare(const std::shared_ptr<const CompiledGrammar>& g, const std::shared_ptr<const TokenizerInfo>& vocab,
                     unsigned seed, int num_walks, std::string* failure) {
    std::mt19937 rng(seed);
    int compared = 0;
    for (int walk = 0; walk < num_walks; ++walk) {
        GrammarMatcher m(g, vocab);
        std::string text;
        for (int step = 0; step < 40; ++step) {
            std::vector<uint32_t> bits(vocab->mask_words());
            m.fill_next_token_bitmask(bits);
            if (bits != test::brute_force_mask(m)) {
                *failure = "mask differs from brute force after '" + text + "'";
                return compared;
            }
            ++compared;
            const auto ids = test::allowed_ids(bits, vocab->num_tokens());
            if (ids.empty()) {
                *failure = "dead end after '" + text + "'";
                return compared;
            }
            const int32_t pick = ids[rng() % ids.size()];
            m.accept_token(pick);
            if (m.is_terminated()) break;
            text += vocab->token_bytes(pick);
        }
    }
    return compared;
}

TEST(Slicer, MasksEqualBruteForceAcrossMatchersSharingTheCache) {
    auto vocab = sliced_vocab();
    for (int i = 0; i < static_cast<int>(std::size(kSlicedSchemas)); ++i) {
        auto g = compile_json_schema(kSlicedSchemas[i]);
        ASSERT_TRUE(g.ok()) << i << ": " << g.status().message();
        std::string failure;
        const int compared = walk_and_compare(g.value(), vocab, 100 + i, 25, &failure);
        ASSERT_TRUE(failure.empty()) << "schema " << i << ": " << failure;
        EXPECT_GT(compared, 40) << i;
        EXPECT_GT(g.value()->mask_cache(vocab)->num_entries(), 0u) << i;
    }
}

TEST(Slicer, RegexOutsideStringsEqualsBruteForce) {
    auto vocab = sliced_vocab();
    // Plain characters that can also end one lexeme and start the next (GBNF: one lexeme per class).
    for (const char* gbnf : {"root ::= [a-z]+ \" \" [a-c0-9]{1,3}", "root ::= (\"ab\" | [a-z]) [0-9]? \"-\"?"}) {
        auto g = compile_gbnf(gbnf);
        ASSERT_TRUE(g.ok()) << gbnf << ": " << g.status().message();
        std::string failure;
        walk_and_compare(g.value(), vocab, 7, 20, &failure);
        EXPECT_TRUE(failure.empty()) << gbnf << ": " << failure;
    }
    auto r = compile_regex("[a-z]{2,3}(é|x)*");
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::string failure;
    walk_and_compare(r.value(), vocab, 8, 20, &failure);
    EXPECT_TRUE(failure.empty()) << failure;
}

TEST(LexemeDfa, AgreeingDepthIsTheDistanceToTheBound) {
    auto g = compile_regex("x[a-z]{0,20}").value();
    ASSERT_EQ(g->num_lexemes(), 1);
    const LexemeDfa& d = g->lexeme(0);
    const int32_t s1 = d.next(d.start(), 'x'), s2 = d.next(s1, 'a'), s3 = d.next(s2, 'b');
    EXPECT_EQ(d.agreeing_depth(s1, s1, 64), 64);
    EXPECT_EQ(d.agreeing_depth(s1, s2, 64), 19);  // 20 letters more: alive from s1 only
    EXPECT_EQ(d.agreeing_depth(s2, s3, 64), 18);
    EXPECT_EQ(d.agreeing_depth(s1, s2, 5), 5);
    EXPECT_EQ(d.agreeing_depth(d.start(), s1, 64), 0);  // accepting from s1 only
}

// Unsliced states with long bounded counts: each position's mask starts from the previous one's
// (look_alike), and only the trie below the depth where they part is walked again.
const char* kLookAlikeSchemas[] = {
    R"({"type":"string","format":"hostname"})",
    R"({"type":"string","pattern":"^[a-z0-9-]{0,40}$"})",
    R"({"type":"array","items":{"type":"string","pattern":"^[a-c]{2,30}x$"},"maxItems":3})",
    R"({"type":"object","properties":{"e":{"type":"string","format":"email"},"h":{"type":"string","format":"hostname"}},"required":["e","h"]})",
};

// Single printable bytes, then long runs of count characters (up to 36 bytes, past the counts'
// bounds) so that the tokens deeper than where two positions part are many.
std::shared_ptr<const TokenizerInfo> long_runs_vocab() {
    std::vector<std::string> t = {"<eos>", "\"", "\":", ",\"", "\"}", "\"]"};
    for (char c = ' '; c <= '~'; ++c) t.push_back(std::string(1, c));
    for (const std::string unit : {"a", "ab", "z-", "7", "a.", "b@c"}) {
        for (std::string run = unit + unit; run.size() <= 36; run += unit) {
            t.push_back(run);
            t.push_back(run + "\"");
        }
    }
    return TokenizerInfo::create(t, {0}).value();
}

TEST(Slicer, LookAlikeStatesGiveTheBruteForceMask) {
    for (const auto& vocab : {sliced_vocab(), long_runs_vocab()}) {
        for (int i = 0; i < static_cast<int>(std::size(kLookAlikeSchemas)); ++i) {
            auto g = compile_json_schema(kLookAlikeSchemas[i]);
            ASSERT_TRUE(g.ok()) << i << ": " << g.status().message();
            std::string failure;
            const int compared = walk_and_compare(g.value(), vocab, 200 + i, 25, &failure);
            ASSERT_TRUE(failure.empty()) << "schema " << i << ": " << failure;
            EXPECT_GT(compared, 40) << i;
        }
        auto r = compile_regex("[a-z]{2,40}(\u00e9|x)*");
        ASSERT_TRUE(r.ok()) << r.status().message();
        std::string failure;
        walk_and_compare(r.value(), vocab, 9, 20, &failure);
        EXPECT_TRUE(failure.empty()) << failure;
    }
}

TEST(Slicer, MatchersOnSeveralThreadsShareOneCacheAndStayExact) {
    auto vocab = sliced_vocab();
    auto g = compile_json_schema(kSlicedSchemas[0]).value();
    std::vector<std::string> failures(4);
    std::vector<int> compared(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] { compared[t] = walk_and_compare(g, vocab, 1000 + t, 10, &failures[t]); });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) {
        EXPECT_TRUE(failures[t].empty()) << t << ": " << failures[t];
        EXPECT_GT(compared[t], 20) << t;
    }
}

}  // namespace
}  // namespace hichat::grammar
