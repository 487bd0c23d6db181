// Tokenizer throughput: encodes English text (the licence texts every Debian system has, joined)
// with the Llama-3.2 tokenizer on one thread and prints one JSON line.
//   tokenizer_bench [MODEL_DIR] [NUM_REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string english_text() {
    std::vector<std::string> paths;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/share/common-licenses")) {
        if (entry.is_regular_file()) paths.push_back(entry.path().string());
    }
    std::sort(paths.begin(), paths.end());
    std::string text;
    for (const auto& path : paths) {
        auto content = hichat::read_file(path);
        if (content.ok()) text += content.value();
    }
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : std::string(HICHAT_LENML_DIR) + "/tokenizer-llama3_2/models";
    const int num_repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    auto tok = hichat::tokenizer::Tokenizer::load(dir);
    if (!tok.ok()) {
        std::fprintf(stderr, "tokenizer_bench: %s\n", tok.status().message().c_str());
        return 2;
    }
    const std::string text = english_text();
    if (text.empty()) {
        std::fprintf(stderr, "tokenizer_bench: no text in /usr/share/common-licenses\n");
        return 2;
    }
    size_t num_tokens = tok.value()->encode(text).size();  // warm-up (fills the word cache)
    double best_seconds = 1e30;
    for (int i = 0; i < num_repeats; ++i) {
        const auto start = std::chrono::steady_clock::now();
        num_tokens = tok.value()->encode(text).size();
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        best_seconds = std::min(best_seconds, elapsed.count());
    }
    auto cold = hichat::tokenizer::Tokenizer::load(dir);  // fresh cache: first-pass speed
    const auto start = std::chrono::steady_clock::now();
    cold.value()->encode(text);
    const std::chrono::duration<double> cold_seconds = std::chrono::steady_clock::now() - start;
    std::printf("{\"bench\":\"tokenizer_encode\",\"tokenizer\":\"%s\",\"threads\":1,\"bytes\":%zu,\"tokens\":%zu,"
                "\"seconds\":%.4f,\"mb_per_s\":%.2f,\"cold_mb_per_s\":%.2f}\n",
                dir.c_str(), text.size(), num_tokens, best_seconds, text.size() / best_seconds / 1e6,
                text.size() / cold_seconds.count() / 1e6);
    return 0;
}
