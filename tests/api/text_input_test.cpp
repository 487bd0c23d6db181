#include "api/text_input.h"

#include <gtest/gtest.h>

namespace hichat::api {
namespace {

TEST(TextInput, ValidUtf8IsUntouched) {
    std::string s = "plain ascii, é, 你好, 😀";
    EXPECT_FALSE(mark_invalid_utf8(s));
    EXPECT_EQ(s, "plain ascii, é, 你好, 😀");
}

TEST(TextInput, EachInvalidByteBecomesAMarker) {
    const std::string m(kInvalidUtf8Marker);
    for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{
             {"a\xFF" "b", "a" + m + "b"},
             {"\xC0\xAF", m + m},                  // overlong
             {"\xED\xA0\x80", m + m + m},          // surrogate
             {"\xF4\x90\x80\x80", m + m + m + m},  // above U+10FFFF
             {"x\xE4\xBD", "x" + m + m},           // truncated
         }) {
        std::string s = in;
        EXPECT_TRUE(mark_invalid_utf8(s));
        EXPECT_EQ(s, out);
    }
}

TEST(TextInput, StripsC0AndC1ControlsButKeepsWhitespace) {
    EXPECT_EQ(strip_control_chars(std::string("a\x01\x1f\x7f" "b\t\n\r") + "\xC2\x85" "c\xC2\xA0"), "ab\t\n\rc\xC2\xA0");
}

}  // namespace
}  // namespace hichat::api
