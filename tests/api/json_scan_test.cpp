// JsonScan: complete, incomplete (every proper prefix of a valid value) and invalid JSON text, checked
// against nlohmann's parser on the complete values; JsonCompactor in any pieces.
#include "api/json_scan.h"

#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

const char* const kValues[] = {
    R"({"a": [1, -2.5e+3, true, false, null], "b": {"c": "x\"y\\z\u00e9\ud83d\ude00"}, "d": []})",
    R"([[[[]]], {}, "", 0, -0.0, 1E9])",
    R"("plain")",
    "123",
    "true",
};

TEST(JsonScan, CompleteValuesEndWhereTheParserSaysAndEveryPrefixIsIncomplete) {
    for (const std::string v : kValues) {
        const std::string text = v + " ,";  // a terminator after the value
        size_t end = 0;
        ASSERT_EQ(scan_json_value(text, 0, end), JsonScan::kComplete) << v;
        EXPECT_EQ(end, v.size()) << v;
        EXPECT_FALSE(nlohmann::json::parse(text.substr(0, end), nullptr, false).is_discarded()) << v;
        for (size_t n = 1; n < v.size(); ++n) {
            EXPECT_EQ(scan_json_value(v.substr(0, n), 0, end), JsonScan::kIncomplete) << v.substr(0, n);
        }
    }
}

TEST(JsonScan, InvalidTextIsInvalidAsSoonAsItCannotContinue) {
    for (const char* bad : {"{1: 2}", "[1 2]", "{\"a\" 1}", "tru e", "nulL", "-x", "01", "[1,]x", "\"a\x01\"",
                            "\"\\q\"", "\"\\u12g4\"", "{\"a\":1]", "1.e5"}) {
        size_t end = 0;
        const JsonScan r = scan_json_value(bad, 0, end);
        // "01": the value 0 ends before the 1; "[1,]": the ']' where a value must come.
        if (std::string(bad) == "01") {
            ASSERT_EQ(r, JsonScan::kComplete);
            EXPECT_EQ(end, 1u);
            continue;
        }
        EXPECT_EQ(r, JsonScan::kInvalid) << bad;
    }
    // Where it fails: the first byte that cannot continue; the text before it is an open value.
    for (const auto& [bad, at] : std::vector<std::pair<std::string, size_t>>{
             {"[1 2]", 3}, {"{\"a\": tx}", 7}, {"\"ab\\q\"", 4}, {"[-1.x]", 4}, {"\"\\u12g4\"", 5}, {"[1,]", 3}}) {
        size_t end = 0;
        ASSERT_EQ(scan_json_value(bad, 0, end), JsonScan::kInvalid) << bad;
        EXPECT_EQ(end, at) << bad;
        EXPECT_EQ(scan_json_value(bad.substr(0, at), 0, end), JsonScan::kIncomplete) << bad;
    }
}

TEST(JsonScan, StringsDecodeEscapesAndSurrogatePairs) {
    std::string decoded;
    size_t end = 0;
    ASSERT_EQ(scan_json_string(R"("a\n\"\u00e9\ud83d\ude00")", 0, end, &decoded), JsonScan::kComplete);
    EXPECT_EQ(decoded, "a\n\"\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_EQ(scan_json_string(R"("\udc00")", 0, end), JsonScan::kInvalid) << "a lone low surrogate";
    EXPECT_EQ(scan_json_string(R"("\ud83dx")", 0, end), JsonScan::kInvalid) << "a lone high surrogate";
    EXPECT_EQ(end, 7u);
    EXPECT_EQ(scan_json_string(R"("\ud83d\u0041")", 0, end), JsonScan::kInvalid);
    EXPECT_EQ(scan_json_string(R"("\ud83d)", 0, end), JsonScan::kIncomplete);
    EXPECT_EQ(scan_json_string(R"("\ud83d\u)", 0, end), JsonScan::kIncomplete);
}

TEST(JsonCompactor, DropsSpaceBetweenTokensOnlyInAnyPieces) {
    const std::string text = " { \"a b\" : [ 1 , \"x \\\" y\" ] ,\n\t\"c\": {} } ";
    std::string whole;
    JsonCompactor().append(text, whole);
    EXPECT_EQ(whole, R"({"a b":[1,"x \" y"],"c":{}})");
    std::string bytes;
    JsonCompactor c;
    for (char ch : text) c.append(std::string_view(&ch, 1), bytes);
    EXPECT_EQ(bytes, whole);
}

}  // namespace
}  // namespace hichat::api
