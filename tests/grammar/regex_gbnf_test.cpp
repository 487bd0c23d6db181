// The regex and GBNF front ends: strings accepted and refused, syntax errors with positions.
#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "test_vocab.h"

namespace hichat::grammar {
namespace {

bool matches(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
    GrammarMatcher m(g, test::byte_vocab());
    for (char c : text) {
        if (!m.accept_bytes(std::string_view(&c, 1))) return false;
    }
    return m.is_accepting();
}

std::shared_ptr<const CompiledGrammar> regex(std::string_view p) {
    auto g = compile_regex(p);
    EXPECT_TRUE(g.ok()) << p << ": " << g.status().message();
    return g.ok() ? g.value() : nullptr;
}

std::shared_ptr<const CompiledGrammar> gbnf(std::string_view p) {
    auto g = compile_gbnf(p);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return g.ok() ? g.value() : nullptr;
}

TEST(Regex, LiteralsClassesRepeats) {
    auto g = regex("ab[0-9]{2,3}(x|yz)*");
    EXPECT_TRUE(matches(g, "ab12"));
    EXPECT_TRUE(matches(g, "ab123xyzx"));
    EXPECT_FALSE(matches(g, "ab1"));
    EXPECT_FALSE(matches(g, "ab1234"));
    EXPECT_FALSE(matches(g, "ab12y"));
    EXPECT_FALSE(matches(g, ""));
}

TEST(Regex, EscapesDotAndAnchors) {
    auto g = regex("^\\d+\\.\\w\\s.$");
    EXPECT_TRUE(matches(g, "12.a b"));
    EXPECT_TRUE(matches(g, "1._\t\xc3\xa9"));  // . takes a whole UTF-8 character
    EXPECT_FALSE(matches(g, "1.a \n"));        // . excludes newline
    EXPECT_FALSE(matches(g, "1.a \xc3"));      // half a character
}

TEST(Regex, EmptyMatchAndOptional) {
    auto g = regex("a*");
    EXPECT_TRUE(matches(g, ""));
    EXPECT_TRUE(matches(g, "aaa"));
    EXPECT_FALSE(matches(g, "b"));
}

TEST(Regex, UnicodeRangesAtTheByteLevel) {
    auto g = regex("[\\u00e0-\\u00ff\\u4e00-\\u9fff\\u{1F600}-\\u{1F64F}]+");
    EXPECT_TRUE(matches(g, "\xc3\xa0\xe4\xb8\x80\xf0\x9f\x98\x80"));  // à 一 😀
    EXPECT_FALSE(matches(g, "\xc3\x9f"));                            // ß (U+00DF)
    EXPECT_FALSE(matches(g, "a"));
    auto neg = regex("[^a]");
    EXPECT_TRUE(matches(neg, "\xe2\x82\xac"));  // €
    EXPECT_FALSE(matches(neg, "\xed\xa0\x80"));  // an encoded surrogate is not UTF-8
}

TEST(Regex, UnsupportedConstructsNamedWithOffset) {
    struct Case {
        const char* pattern;
        const char* message;
    };
    for (const Case& c : {Case{"(a)\\1", "backreference \\1 is not supported at offset 3"},
                          Case{"a(?=b)", "lookahead is not supported at offset 1"},
                          Case{"(?<!x)y", "lookbehind is not supported at offset 0"},
                          Case{"a\\bc", "word boundary \\b is not supported at offset 1"},
                          Case{"a^b", "anchor '^' inside the pattern is not supported at offset 1"},
                          Case{"\\p{L}", "unicode property escape \\p is not supported at offset 0"},
                          Case{"(ab", "missing ')' at offset 0"},
                          Case{"[a-", "unterminated character class at offset 0"},
                          Case{"*a", "nothing to repeat at offset 0"},
                          Case{"a{3,1}", "has max < min at offset 1"}}) {
        auto g = compile_regex(c.pattern);
        ASSERT_FALSE(g.ok()) << c.pattern;
        EXPECT_NE(g.status().message().find(c.message), std::string::npos) << g.status().message();
    }
}

TEST(Gbnf, RulesLiteralsClassesAndRepeats) {
    auto g = gbnf(R"G(# a tiny arithmetic language
root   ::= expr
expr   ::= term ("+" term)*
term   ::= num | "(" expr ")"
num    ::= [0-9]{1,3}
)G");
    EXPECT_TRUE(matches(g, "1+(22+333)"));
    EXPECT_TRUE(matches(g, "7"));
    EXPECT_FALSE(matches(g, "1+"));
    EXPECT_FALSE(matches(g, "1234"));
    EXPECT_FALSE(matches(g, "(1"));
}

TEST(Gbnf, CharacterLevelSemanticsNeedNoLookahead) {
    // "a" "b" and "ab" "c" share a prefix: a greedy multi-character lexer would refuse "ab".
    auto g = gbnf("root ::= \"a\" \"b\" | \"ab\" \"c\"\n");
    EXPECT_TRUE(matches(g, "ab"));
    EXPECT_TRUE(matches(g, "abc"));
    EXPECT_FALSE(matches(g, "abcc"));
}

TEST(Gbnf, EscapesNegatedClassesDotAndContinuationLines) {
    auto g = gbnf("root ::= \"\\\"\" [^\"\\n]* \"\\\"\" tail\n"
                  "tail ::= \"\"\n"
                  "       | \"\\u00e9\" .\n");
    EXPECT_TRUE(matches(g, "\"hi there\""));
    EXPECT_TRUE(matches(g, "\"x\"\xc3\xa9z"));
    EXPECT_FALSE(matches(g, "\"a\nb\""));
}

TEST(Gbnf, SyntaxErrorsGiveLineAndColumn) {
    struct Case {
        const char* grammar;
        const char* message;
    };
    for (const Case& c : {Case{"root ::= foo\n", "undefined rule 'foo' at line 1, column 10"},
                          Case{"root ::= \"a\"\nx = \"b\"\n", "expected '::=' at line 2, column 3"},
                          Case{"root ::= \"abc\n", "unterminated string literal at line 1, column 10"},
                          Case{"root ::= [ab\n", "unterminated character class at line 1, column 10"},
                          Case{"root ::= (\"a\"\n", "expected ')' at line 2, column 1"},
                          Case{"start ::= \"a\"\n", "no 'root' rule"},
                          Case{"root ::= \"a\"{2,1}\n", "bad repeat count"}}) {
        auto g = compile_gbnf(c.grammar);
        ASSERT_FALSE(g.ok()) << c.grammar;
        EXPECT_NE(g.status().message().find(c.message), std::string::npos) << g.status().message();
    }
}

}  // namespace
}  // namespace hichat::grammar
