#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace hichat::tokenizer {
namespace {

const std::string kFffd(kReplacementChar);

TEST(Utf8Test, ValidTextIsUnchanged) {
    const std::string text = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
    EXPECT_TRUE(is_valid_utf8(text));
    EXPECT_EQ(to_valid_utf8(text), text);
}

// One U+FFFD per maximal subpart (the WHATWG / Unicode recommendation that TextDecoder uses).
TEST(Utf8Test, MaximalSubpartReplacement) {
    EXPECT_EQ(to_valid_utf8("\x80"), kFffd);
    EXPECT_EQ(to_valid_utf8("caf\xC3"), "caf" + kFffd);
    EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98 ok"), kFffd + " ok");        // truncated 4-byte: one
    EXPECT_EQ(to_valid_utf8("\xC0\xAF"), kFffd + kFffd);              // C0 never starts a sequence
    EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate: A0 out of range after ED
    EXPECT_EQ(to_valid_utf8("\xE0\x80"), kFffd + kFffd);              // overlong 3-byte
    EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
    EXPECT_EQ(to_valid_utf8("\xFF\xFE"), kFffd + kFffd);
    EXPECT_FALSE(is_valid_utf8("\xE4\xB8"));
}

TEST(Utf8Test, StreamingHoldsBackIncompleteTail) {
    std::string out;
    EXPECT_EQ(append_lossy_utf8("ab\xE4\xB8", /*final=*/false, out), 2u);
    EXPECT_EQ(out, "ab");
    out.clear();
    EXPECT_EQ(append_lossy_utf8("ab\xE4\xB8", /*final=*/true, out), 4u);
    EXPECT_EQ(out, "ab" + kFffd);
}

TEST(Utf8Test, CodePointsRoundTrip) {
    for (const char32_t cp : {U'a', U'\u00e9', U'\u4e2d', U'\U0001F600', U'\U0010FFFF'}) {
        std::string s;
        append_utf8(cp, s);
        size_t pos = 0;
        EXPECT_EQ(next_code_point(s, pos), cp);
        EXPECT_EQ(pos, s.size());
    }
}

}  // namespace
}  // namespace hichat::tokenizer
