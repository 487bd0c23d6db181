// Compares Tokenizer with the transformers.js reference (tests/node/tokenizer_reference.mjs) on
// tests/tokenizer/corpus.json for the five tokenizers. The reference file is made by the ctest
// fixture "tokenizer_reference"; without node or the npm packages these tests fail, never skip.
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "test_support.h"
#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

using testing::CorpusCase;

const nlohmann::json* reference() {
    static nlohmann::json ref;
    static bool loaded = false;
    if (!loaded) {
        auto text = read_file(testing::kReferencePath);
        if (!text.ok()) {
            ADD_FAILURE() << "no reference ids: " << text.status().message()
                          << "; the ctest fixture 'tokenizer_reference' makes it with node" << testing::missing_packages_hint();
            return nullptr;
        }
        ref = nlohmann::json::parse(text.value());
        loaded = true;
    }
    return &ref;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        tok_ = testing::reference_tokenizer(GetParam());
        const nlohmann::json* ref = reference();
        ASSERT_NE(tok_, nullptr);
        ASSERT_NE(ref, nullptr);
        ASSERT_TRUE(ref->at("tokenizers").contains(GetParam())) << "reference has no tokenizer " << GetParam();
        cases_ = &ref->at("tokenizers").at(GetParam()).at("cases");
        corpus_ = testing::load_corpus();
        ASSERT_EQ(cases_->size(), corpus_.size()) << "reference is stale: rerun the tokenizer_reference fixture";
        ASSERT_GE(corpus_.size(), 40u);
    }

    void check_encode() const;
    void check_decode() const;
    void check_round_trip() const;

    const Tokenizer* tok_ = nullptr;
    const nlohmann::json* cases_ = nullptr;
    std::vector<CorpusCase> corpus_;
};

// One test per tokenizer, so that ctest (one process per test) loads each tokenizer once.
TEST_P(GoldenTest, MatchesReference) {
    check_encode();
    check_decode();
    check_round_trip();
}

void GoldenTest::check_encode() const {
    for (size_t i = 0; i < corpus_.size(); ++i) {
        const nlohmann::json& ref = (*cases_)[i];
        ASSERT_EQ(ref.at("name").get<std::string>(), corpus_[i].name);
        EXPECT_EQ(tok_->encode(corpus_[i].bytes), ref.at("ids").get<std::vector<int32_t>>()) << "case " << corpus_[i].name;
        EXPECT_EQ(tok_->encode(corpus_[i].bytes, /*add_special_tokens=*/false),
                  ref.at("ids_no_special").get<std::vector<int32_t>>())
            << "case " << corpus_[i].name;
    }
}

void GoldenTest::check_decode() const {
    for (size_t i = 0; i < corpus_.size(); ++i) {
        const nlohmann::json& ref = (*cases_)[i];
        const auto ids = ref.at("ids").get<std::vector<int32_t>>();
        const auto ids_no_special = ref.at("ids_no_special").get<std::vector<int32_t>>();
        EXPECT_EQ(tok_->decode(ids), ref.at("decoded").get<std::string>()) << "case " << corpus_[i].name;
        EXPECT_EQ(tok_->decode(ids_no_special), ref.at("decoded_no_special").get<std::string>()) << "case " << corpus_[i].name;
        EXPECT_EQ(tok_->decode(ids, /*skip_special_tokens=*/true), ref.at("decoded_skip_special").get<std::string>())
            << "case " << corpus_[i].name;
    }
}

// decode(encode(x)) == x wherever the reference itself round-trips x (not, e.g., where NFC
// changes the text or Mistral's prefix space follows a special token).
void GoldenTest::check_round_trip() const {
    size_t num_lossless = 0;
    for (size_t i = 0; i < corpus_.size(); ++i) {
        const std::string text = to_valid_utf8(corpus_[i].bytes);
        if ((*cases_)[i].at("decoded_no_special").get<std::string>() != text) continue;
        ++num_lossless;
        EXPECT_EQ(tok_->decode(tok_->encode(corpus_[i].bytes, /*add_special_tokens=*/false)), text)
            << "case " << corpus_[i].name;
    }
    EXPECT_GE(num_lossless, corpus_.size() * 3 / 4) << "too few lossless cases to mean anything";
}

INSTANTIATE_TEST_SUITE_P(Reference, GoldenTest, ::testing::ValuesIn(testing::reference_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hichat::tokenizer
