// Unit tests of the BPE pipeline on a tiny hand-written tokenizer.json, where the expected ids
// follow from the merge list by hand.
#include <gtest/gtest.h>

#include "temp_model_dir.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tokenizer {
namespace {

class TinyTokenizerTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto tok = Tokenizer::load(testing::make_model_dir("tiny", {{"tokenizer.json", testing::kTinyTokenizerJson}}));
        ASSERT_TRUE(tok.ok()) << tok.status().message();
        tok_ = std::move(tok).value();
    }
    std::unique_ptr<Tokenizer> tok_;
};

TEST_F(TinyTokenizerTest, MergesInRankOrder) {
    // "▁abc": ▁ a b c -> ▁ ab c -> ▁ abc -> ▁abc
    EXPECT_EQ(tok_->encode("abc", false), (std::vector<int32_t>{16}));
    // "▁cab": ▁ c a b -> ▁ c ab (no merge makes "cab")
    EXPECT_EQ(tok_->encode("cab", false), (std::vector<int32_t>{12, 11, 14}));
    EXPECT_EQ(tok_->encode("abc", true), (std::vector<int32_t>{1, 16}));
}

TEST_F(TinyTokenizerTest, ByteFallbackAndUnk) {
    // é = C3 A9 has byte tokens; 😀 = F0 9F 98 80 too; "d" has none of its byte (0x64) -> <unk>,
    // and two unknown characters in a row fuse into one <unk>.
    EXPECT_EQ(tok_->encode("é", false), (std::vector<int32_t>{12, 3, 4}));
    EXPECT_EQ(tok_->encode("\xF0\x9F\x98\x80", false), (std::vector<int32_t>{12, 5, 6, 7, 8}));
    EXPECT_EQ(tok_->encode("dd", false), (std::vector<int32_t>{12, 0}));
    EXPECT_EQ(tok_->decode(tok_->encode("é\xF0\x9F\x98\x80 abc", false)), "é\xF0\x9F\x98\x80 abc");
}

TEST_F(TinyTokenizerTest, AddedTokensSplitTextAndStripWhitespace) {
    // "[X]" has lstrip/rstrip: the spaces around it vanish; "<s>" inside text is special.
    EXPECT_EQ(tok_->encode("ab  [X]  c", false), (std::vector<int32_t>{12, 14, 13, 12, 11}));
    EXPECT_EQ(tok_->encode("<s>abc</s>", false), (std::vector<int32_t>{1, 16, 2}));
    // Without parse_special, "<s>" is text (byte fallback has no '<', so unk); "[X]" still matches.
    EXPECT_EQ(tok_->encode("<s>[X]", false, false), (std::vector<int32_t>{12, 0, 13}));
}

TEST_F(TinyTokenizerTest, DecodeStripsOnlyTheFirstSpace) {
    EXPECT_EQ(tok_->decode(std::vector<int32_t>{16, 16}), "abc abc");
    EXPECT_EQ(tok_->decode(std::vector<int32_t>{1, 16}), "<s> abc");
    EXPECT_EQ(tok_->decode(std::vector<int32_t>{1, 16}, /*skip_special_tokens=*/true), "abc");
    EXPECT_EQ(tok_->decode(std::vector<int32_t>{12, 12, 9}), " a");
    EXPECT_EQ(tok_->decode(std::vector<int32_t>{-5, 16, 999}), "abc");  // out-of-range ids are ignored
}

TEST_F(TinyTokenizerTest, VocabQueries) {
    EXPECT_EQ(tok_->vocab_size(), 17);
    EXPECT_EQ(tok_->token_to_id("ab"), 14);
    EXPECT_EQ(tok_->token_to_id("[X]"), 13);
    EXPECT_FALSE(tok_->token_to_id("zz").has_value());
    EXPECT_EQ(tok_->id_to_token(16), "\xE2\x96\x81" "abc");
    EXPECT_TRUE(tok_->is_special(1));
    EXPECT_FALSE(tok_->is_special(13));
    EXPECT_EQ(tok_->bos_id(), 1);  // from the template: no tokenizer_config.json here
}

TEST(TokenizerConfigTest, AddBosTokenAppliesWithoutTemplate) {
    std::string json = testing::kTinyTokenizerJson;
    const size_t begin = json.find("\"post_processor\"");
    const size_t end = json.find("\"decoder\"");
    json.replace(begin, end - begin, "\"post_processor\": null,\n  ");
    const std::string config = R"({"add_bos_token": true, "add_eos_token": true, "bos_token": "<s>",
                                   "eos_token": {"content": "</s>", "__type": "AddedToken"}})";
    auto tok = Tokenizer::load(testing::make_model_dir("tiny_config", {{"tokenizer.json", json}, {"tokenizer_config.json", config}}));
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    EXPECT_EQ(tok.value()->encode("abc"), (std::vector<int32_t>{1, 16, 2}));
    EXPECT_EQ(tok.value()->eos_ids(), (std::vector<int32_t>{2}));
}

}  // namespace
}  // namespace hichat::tokenizer
