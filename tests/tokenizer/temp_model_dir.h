// A fresh temporary directory with the given files, for tests that write small tokenizers.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

namespace hichat::tokenizer::testing {

// The directory is this process's own (ctest runs the tests of one fixture as concurrent processes,
// which must not rewrite each other's files) and is removed when the process exits.
inline std::string make_model_dir(const std::string& name, const std::map<std::string, std::string>& files) {
    struct Dirs {
        std::vector<std::string> paths;
        ~Dirs() {
            std::error_code ec;
            for (const auto& p : paths) std::filesystem::remove_all(p, ec);
        }
    };
    static Dirs dirs;
    const std::string dir = ::testing::TempDir() + "/hichat_tok_" + name + "_" + std::to_string(::getpid()) + "_" +
                            std::to_string(dirs.paths.size());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    dirs.paths.push_back(dir);
    for (const auto& [file, content] : files) std::ofstream(dir + "/" + file, std::ios::binary) << content;
    return dir;
}

// A tiny SentencePiece-style BPE tokenizer.json: characters a, b, c, "▁", merges a+b, ab+c,
// byte fallback for everything else, <s> as BOS through a template.
inline const char* kTinyTokenizerJson = R"({
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true, "lstrip": false, "rstrip": false, "single_word": false, "normalized": false},
    {"id": 1, "content": "<s>", "special": true, "lstrip": false, "rstrip": false, "single_word": false, "normalized": false},
    {"id": 2, "content": "</s>", "special": true, "lstrip": false, "rstrip": false, "single_word": false, "normalized": false},
    {"id": 13, "content": "[X]", "special": false, "lstrip": true, "rstrip": true, "single_word": false, "normalized": false}
  ],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0xC3>": 3, "<0xA9>": 4, "<0xF0>": 5, "<0x9F>": 6, "<0x98>": 7,
              "<0x80>": 8, "a": 9, "b": 10, "c": 11, "\u2581": 12, "ab": 14, "abc": 15, "\u2581abc": 16},
    "merges": ["a b", "ab c", "\u2581 abc"]}
})";

}  // namespace hichat::tokenizer::testing
