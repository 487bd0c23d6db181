// CliTest: runs the real `hichat` binary as a user runs it, in a fresh folder per test, and captures
// its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/fixtures.h"

namespace hichat {

struct RunResult {
    int exit_code;
    std::string out, err;
};

class CliTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("hichat_cli_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    // Runs `hichat <args>` (a shell word list) with `input` on stdin.
    RunResult run(const std::string& args, const std::string& input = "") {
        std::ofstream(dir_ / "stdin") << input;
        const std::string cmd = std::string(HICHAT_BIN) + " " + args + " < " + (dir_ / "stdin").string() +
                                " > " + (dir_ / "stdout").string() + " 2> " + (dir_ / "stderr").string();
        const int status = std::system(cmd.c_str());
        return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "stdout"), slurp(dir_ / "stderr")};
    }

    // A model folder `hichat serve` can load (made once per test): llama3 fixture weights, byte tokenizer,
    // tiny chat template.
    std::string make_model_dir() {
        const std::filesystem::path fixtures = HICHAT_FIXTURES_DIR, dir = dir_ / "model";
        if (std::filesystem::exists(dir)) return dir.string();
        std::filesystem::create_directories(dir);
        std::filesystem::copy_file(fixtures / "llama3/config.json", dir / "config.json");
        std::filesystem::copy_file(fixtures / "llama3/model.safetensors", dir / "model.safetensors");
        std::filesystem::copy_file(fixtures / "byte_tokenizer/tokenizer.json", dir / "tokenizer.json");
        std::filesystem::copy_file(fixtures / "tiny_chat/tokenizer_config.json",
                                   dir / "tokenizer_config.json");
        return dir.string();
    }

    static std::string slurp(const std::filesystem::path& p) {
        std::ifstream in(p, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    static int count_lines(const std::string& s) {
        int n = 0;
        for (char c : s) n += c == '\n';
        return n;
    }

    static bool contains(const std::string& haystack, const std::string& needle) {
        return haystack.find(needle) != std::string::npos;
    }

    std::filesystem::path dir_;
};

}  // namespace hichat
