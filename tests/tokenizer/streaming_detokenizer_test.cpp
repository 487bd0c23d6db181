// StreamingDetokenizer: every delta is valid UTF-8 and the deltas add up to decode(all ids), for
// corpus texts, random id sequences, multi-byte characters and byte-fallback tokens.
#include <random>

#include "temp_model_dir.h"
#include "test_support.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

// Pushes ids one by one; checks each delta and returns the concatenation (with flush).
std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special) {
    StreamingDetokenizer detok(tok, skip_special);
    std::string text;
    for (const int32_t id : ids) {
        const std::string delta = detok.push(id);
        EXPECT_TRUE(is_valid_utf8(delta)) << "delta for id " << id;
        text += delta;
    }
    const std::string rest = detok.flush();
    EXPECT_TRUE(is_valid_utf8(rest));
    return text + rest;
}

class StreamingTest : public ::testing::TestWithParam<std::string> {};

// Corpus texts and random id sequences; one test per tokenizer so each is loaded once.
TEST_P(StreamingTest, StreamsLikeDecode) {
    const Tokenizer* tok = testing::reference_tokenizer(GetParam());
    ASSERT_NE(tok, nullptr);
    const auto corpus = testing::load_corpus();
    ASSERT_FALSE(corpus.empty());
    for (const auto& c : corpus) {
        const auto ids = tok->encode(c.bytes);
        EXPECT_EQ(stream_all(*tok, ids, false), tok->decode(ids)) << "case " << c.name;
        EXPECT_EQ(stream_all(*tok, ids, true), tok->decode(ids, true)) << "case " << c.name;
    }
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> any_id(0, tok->vocab_size() - 1);
    for (int round = 0; round < 200; ++round) {
        std::vector<int32_t> ids(1 + rng() % 40);
        for (auto& id : ids) id = any_id(rng);
        EXPECT_EQ(stream_all(*tok, ids, false), tok->decode(ids)) << "round " << round;
        EXPECT_EQ(stream_all(*tok, ids, true), tok->decode(ids, true)) << "round " << round;
    }
}

INSTANTIATE_TEST_SUITE_P(Reference, StreamingTest, ::testing::ValuesIn(testing::reference_names()),
                         [](const auto& info) { return info.param; });

class TinyStreamingTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto tok = Tokenizer::load(testing::make_model_dir("tiny_stream", {{"tokenizer.json", testing::kTinyTokenizerJson}}));
        ASSERT_TRUE(tok.ok()) << tok.status().message();
        tok_ = std::move(tok).value();
    }
    std::unique_ptr<Tokenizer> tok_;
};

TEST_F(TinyStreamingTest, ByteFallbackCharacterIsHeldUntilComplete) {
    StreamingDetokenizer detok(*tok_);
    EXPECT_EQ(detok.push(12), "");  // the leading space is stripped
    EXPECT_EQ(detok.push(5), "");   // F0: first of four bytes
    EXPECT_EQ(detok.push(6), "");
    EXPECT_EQ(detok.push(7), "");
    EXPECT_EQ(detok.num_bytes_pending(), 3u);
    EXPECT_EQ(detok.push(8), "\xF0\x9F\x98\x80");
    EXPECT_EQ(detok.push(16), " abc");
    EXPECT_EQ(detok.flush(), "");
}

TEST_F(TinyStreamingTest, IncompleteOrInvalidBytesBecomeReplacementCharacters) {
    StreamingDetokenizer detok(*tok_);
    EXPECT_EQ(detok.push(9), "a");
    EXPECT_EQ(detok.push(5), "");  // F0 9F, then a token that is not a continuation byte
    EXPECT_EQ(detok.push(6), "");
    EXPECT_EQ(detok.push(10), std::string(kReplacementChar) + "b");
    EXPECT_EQ(detok.push(4), kReplacementChar);  // a lone continuation byte is invalid at once
    EXPECT_EQ(detok.push(3), "");                // C3 waits for its continuation ...
    EXPECT_EQ(detok.flush(), kReplacementChar);  // ... which never comes
    const std::vector<int32_t> ids{9, 5, 6, 10, 4, 3};
    EXPECT_EQ(tok_->decode(ids), "a" + std::string(kReplacementChar) + "b" + std::string(kReplacementChar) +
                                     std::string(kReplacementChar));
}

}  // namespace
}  // namespace hichat::tokenizer
