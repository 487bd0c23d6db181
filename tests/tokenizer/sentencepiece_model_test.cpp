// tokenizer.model support: no reference package ships one, so the test writes a SentencePiece
// BPE model equivalent to Mistral's tokenizer.json (same pieces; scores ordered like the merges) and checks that libsentencepiece through our
// tokenizer.model path gives the same ids and text as the tokenizer.json path.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sentencepiece_model_writer.h"
#include "test_support.h"

namespace hichat::tokenizer {
namespace {

TEST(SentencePieceModelTest, MatchesTokenizerJsonOnCorpus) {
    const Tokenizer* from_json = testing::reference_tokenizer("mistral");
    ASSERT_NE(from_json, nullptr);
    auto text = read_file(testing::model_dir("mistral") + "/tokenizer.json");
    ASSERT_TRUE(text.ok()) << text.status().message();
    const std::string dir = ::testing::TempDir() + "/hichat_spm_model_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/tokenizer.model", std::ios::binary)
        << testing::sentencepiece_model_from(nlohmann::json::parse(text.value()));
    std::filesystem::copy_file(testing::model_dir("mistral") + "/tokenizer_config.json", dir + "/tokenizer_config.json",
                               std::filesystem::copy_options::overwrite_existing);
    auto from_model = Tokenizer::load(dir);
    ASSERT_TRUE(from_model.ok()) << from_model.status().message();
    const Tokenizer& spm = *from_model.value();

    EXPECT_EQ(spm.vocab_size(), from_json->vocab_size());
    EXPECT_EQ(spm.bos_id(), from_json->bos_id());
    EXPECT_EQ(spm.eos_ids(), from_json->eos_ids());
    const auto corpus = testing::load_corpus();
    ASSERT_FALSE(corpus.empty());
    for (const auto& c : corpus) {
        const auto ids = from_json->encode(c.bytes);
        EXPECT_EQ(spm.encode(c.bytes), ids) << "case " << c.name;
        EXPECT_EQ(spm.encode(c.bytes, false, false), from_json->encode(c.bytes, false, false)) << "case " << c.name;
        EXPECT_EQ(spm.decode(ids), from_json->decode(ids)) << "case " << c.name;
        EXPECT_EQ(spm.decode(ids, true), from_json->decode(ids, true)) << "case " << c.name;
    }
}

TEST(SentencePieceModelTest, GarbageModelIsAnErrorNamingTheFile) {
    const std::string dir = ::testing::TempDir() + "/hichat_spm_garbage_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/tokenizer.model", std::ios::binary) << "this is not a protobuf \xff\xff\xff";
    auto tok = Tokenizer::load(dir);
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.status().message().find("tokenizer.model"), std::string::npos) << tok.status().message();
}

}  // namespace
}  // namespace hichat::tokenizer
