// The `hichat` binary, run as a user runs it: outputs, exit codes and one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "common/fixtures.h"

namespace hichat {
namespace {

namespace fs = std::filesystem;

TEST_F(CliTest, ScoreWritesTransformersLogits) {
    auto golden = testing::read_golden("llama3");
    auto ids = golden["ids_40"].get<std::vector<int>>();
    std::string list;
    for (int id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
    auto out = dir_ / "logits.bin";
    auto r = run("score --model " + testing::fixture_dir("llama3") + " --ids " + list + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = testing::read_floats(out.string());
    auto expected = testing::read_floats(testing::fixture_dir("llama3") + "/logits_40.bin");
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_LT(testing::relative_error(got, expected), 1e-3);
}

TEST_F(CliTest, MissingModelFolderIsOneErrorLine) {
    auto r = run("score --model /nonexistent/model --ids 1,2 --out " + (dir_ / "x").string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadConfigJsonNamesTheFile) {
    fs::copy(testing::fixture_dir("qwen2"), dir_ / "m");
    std::ofstream(dir_ / "m" / "config.json") << "{ \"architectures\": [\"Qwen2ForCausalLM\", ";
    auto r = run("score --model " + (dir_ / "m").string() + " --ids 1 --out " + (dir_ / "x").string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
}

TEST_F(CliTest, TruncatedWeightsNameTheFile) {
    fs::copy(testing::fixture_dir("mistral"), dir_ / "m");
    fs::resize_file(dir_ / "m" / "model.safetensors", fs::file_size(dir_ / "m" / "model.safetensors") / 2);
    auto r = run("score --model " + (dir_ / "m").string() + " --ids 1 --out " + (dir_ / "x").string());
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadFlagsAreOneErrorLine) {
    const std::string model = " --model " + testing::fixture_dir("llama3");
    for (const std::string& args :
         {"score" + model + " --ids 1,x,3 --out /tmp/x", "score" + model + " --ids 99999 --out /tmp/x",
          "score" + model + " --ids 1 --out /tmp/x --bogus 3", "score" + model + " --out /tmp/x",
          "generate" + model + " --prompt hi --max-tokens 0", "generate" + model + " --prompt hi --temperature nan",
          std::string("frobnicate")}) {
        auto r = run(args);
        EXPECT_EQ(r.exit_code, 2) << args;
        EXPECT_GE(count_lines(r.err), 1) << args;
        EXPECT_EQ(r.err.find("Aborted"), std::string::npos) << args;
    }
}

TEST_F(CliTest, TokenizeRoundTripsWithOnlyTokenizerFiles) {
    fs::create_directories(dir_ / "tok");
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
        fs::copy(fs::path(HICHAT_LLAMA3_TOKENIZER_DIR) / f, dir_ / "tok" / f);
    }
    auto enc = run("tokenize --model " + (dir_ / "tok").string(), R"(["Hello world", "", "héllo 你好"])");
    ASSERT_EQ(enc.exit_code, 0) << enc.err;
    auto ids = nlohmann::json::parse(enc.out);
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(ids[0], nlohmann::json({128000, 9906, 1917}));  // Llama-3: BOS, "Hello", " world"
    EXPECT_EQ(ids[1], nlohmann::json({128000}));
    auto dec = run("tokenize --model " + (dir_ / "tok").string() + " --decode", enc.out);
    ASSERT_EQ(dec.exit_code, 0) << dec.err;
    EXPECT_EQ(nlohmann::json::parse(dec.out),
              nlohmann::json({"<|begin_of_text|>Hello world", "<|begin_of_text|>", "<|begin_of_text|>héllo 你好"}));
}

TEST_F(CliTest, TokenizeRejectsBadJson) {
    // The fixtures' byte-level tokenizer (320 ids): loading Llama-3's 9 MB one four times took a minute
    // under the sanitizers, and the input's JSON is what this test is about.
    fs::create_directories(dir_ / "tok");
    fs::copy(testing::fixture_dir("byte_tokenizer") + "/tokenizer.json", dir_ / "tok" / "tokenizer.json");
    const auto ok = run("tokenize --model " + (dir_ / "tok").string(), R"(["Hello"])");
    ASSERT_EQ(ok.exit_code, 0) << ok.err;   // the tokenizer loads: the errors below are the input's
    for (const char* input : {"not json", "[1, 2]", "{\"a\": 1}"}) {
        auto r = run("tokenize --model " + (dir_ / "tok").string(), input);
        EXPECT_EQ(r.exit_code, 2) << input;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
    }
    auto r = run("tokenize --model " + (dir_ / "tok").string() + " --decode", "[[1, 99999999]]");
    EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST_F(CliTest, GenerateIsReproducibleWithASeed) {
    // A fixture checkpoint with a byte-level tokenizer of its own vocabulary size (320 ids).
    fs::copy(testing::fixture_dir("qwen3"), dir_ / "m");
    fs::copy(testing::fixture_dir("byte_tokenizer") + "/tokenizer.json", dir_ / "m" / "tokenizer.json");
    const std::string base = "generate --model " + (dir_ / "m").string() + " --prompt 'Once upon' --max-tokens 12";
    auto a = run(base + " --temperature 0.8 --top-p 0.9 --seed 7");
    auto b = run(base + " --temperature 0.8 --top-p 0.9 --seed 7");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    EXPECT_NE(a.err.find("tokens/s"), std::string::npos) << a.err;
    auto greedy1 = run(base + " --temperature 0");
    auto greedy2 = run(base + " --temperature 0 --seed 99");
    ASSERT_EQ(greedy1.exit_code, 0) << greedy1.err;
    EXPECT_EQ(greedy1.out, greedy2.out);
}

}  // namespace
}  // namespace hichat
