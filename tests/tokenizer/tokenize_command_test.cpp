// `hichat tokenize`: JSON in, JSON out, and exit code 2 with one error line on bad input.
#include "tokenize_command.h"

#include <iostream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "command_line.h"
#include "test_support.h"

namespace hichat::tools {
namespace {

struct CommandResult {
    int exit_code;
    std::string out;
    std::string err;
};

CommandResult run(const std::vector<std::string>& args, const std::string& stdin_text) {
    std::istringstream in(stdin_text);
    std::ostringstream out, err;
    auto* old_in = std::cin.rdbuf(in.rdbuf());
    auto* old_out = std::cout.rdbuf(out.rdbuf());
    auto* old_err = std::cerr.rdbuf(err.rdbuf());
    const int code = run_command(tokenize_command(), args);
    std::cin.rdbuf(old_in);
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    return {code, out.str(), err.str()};
}

TEST(TokenizeCommandTest, EncodesAndDecodesLikeTheLibrary) {
    const auto* tok = tokenizer::testing::reference_tokenizer("gpt2");
    ASSERT_NE(tok, nullptr);
    const std::string dir = tokenizer::testing::model_dir("gpt2");
    const std::vector<std::string> texts = {"Hello, world!", "", "<|endoftext|>中文 😀"};
    auto encoded = run({"--model", dir}, nlohmann::json(texts).dump());
    ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
    const auto ids = nlohmann::json::parse(encoded.out).get<std::vector<std::vector<int32_t>>>();
    ASSERT_EQ(ids.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(ids[i], tok->encode(texts[i]));

    auto decoded = run({"--model", dir, "--decode"}, nlohmann::json(ids).dump());
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    const auto strings = nlohmann::json::parse(decoded.out).get<std::vector<std::string>>();
    ASSERT_EQ(strings.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(strings[i], tok->decode(ids[i]));
}

TEST(TokenizeCommandTest, BadInputIsOneErrorLineAndExitCode2) {
    const std::string dir = tokenizer::testing::model_dir("gpt2");
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
        {{"--model", dir}, "not json"},
        {{"--model", dir}, "[1, 2]"},
        {{"--model", dir, "--decode"}, "[[1, -3]]"},
        {{"--model", dir, "--decode"}, "[\"text\"]"},
        {{"--model", "/nonexistent"}, "[]"},
    };  // flag mistakes (no --model, an unknown flag) are the dispatcher's: tests/tools runs the binary
    for (const auto& [args, input] : bad) {
        const auto result = run(args, input);
        EXPECT_EQ(result.exit_code, 2) << input;
        EXPECT_TRUE(result.out.empty()) << input;
        ASSERT_FALSE(result.err.empty()) << input;
        EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "not one line: " << result.err;
    }
}

}  // namespace
}  // namespace hichat::tools
