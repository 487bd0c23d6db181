// Bad tokenizer directories and files: load() returns a Status naming the file and the problem.
#include <gtest/gtest.h>

#include "temp_model_dir.h"
#include "tokenizer/tokenizer.h"

namespace hichat::tokenizer {
namespace {

// Loads dir, expects failure with code, and a message containing each of the needles.
void expect_load_error(const std::string& dir, StatusCode code, const std::vector<std::string>& needles) {
    auto tok = Tokenizer::load(dir);
    ASSERT_FALSE(tok.ok()) << dir;
    EXPECT_EQ(tok.status().code(), code) << tok.status().message();
    for (const auto& needle : needles) {
        EXPECT_NE(tok.status().message().find(needle), std::string::npos)
            << "message '" << tok.status().message() << "' lacks '" << needle << "'";
    }
}

std::string tiny_with(const std::string& from, const std::string& to) {
    std::string json = testing::kTinyTokenizerJson;
    const size_t pos = json.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) json.replace(pos, from.size(), to);
    return json;
}

TEST(BadFilesTest, MissingDirectoryOrFiles) {
    expect_load_error("/nonexistent/hichat/model", StatusCode::kNotFound, {"/nonexistent/hichat/model"});
    expect_load_error(testing::make_model_dir("empty", {}), StatusCode::kNotFound, {"tokenizer.json", "tokenizer.model"});
}

TEST(BadFilesTest, InvalidJson) {
    expect_load_error(testing::make_model_dir("bad_json", {{"tokenizer.json", "{\"model\": [1, 2"}}),
                      StatusCode::kInvalidArgument, {"tokenizer.json", "parse"});
    expect_load_error(testing::make_model_dir("empty_json", {{"tokenizer.json", ""}}), StatusCode::kInvalidArgument,
                      {"tokenizer.json"});
    expect_load_error(testing::make_model_dir("array_json", {{"tokenizer.json", "[]"}}), StatusCode::kInvalidArgument,
                      {"tokenizer.json", "object"});
}

TEST(BadFilesTest, UnsupportedComponentsAreUnimplemented) {
    expect_load_error(testing::make_model_dir("wordpiece", {{"tokenizer.json", tiny_with("\"type\": \"BPE\"", "\"type\": \"WordPiece\"")}}),
                      StatusCode::kUnimplemented, {"tokenizer.json", "WordPiece"});
    expect_load_error(testing::make_model_dir("bad_norm", {{"tokenizer.json", tiny_with("\"Prepend\", \"prepend\"", "\"Precompiled\", \"prepend\"")}}),
                      StatusCode::kUnimplemented, {"tokenizer.json", "Precompiled"});
    expect_load_error(testing::make_model_dir("bad_decoder", {{"tokenizer.json", tiny_with("\"ByteFallback\"", "\"CTC\"")}}),
                      StatusCode::kUnimplemented, {"tokenizer.json", "CTC"});
}

TEST(BadFilesTest, MalformedModelFields) {
    expect_load_error(testing::make_model_dir("bad_merge", {{"tokenizer.json", tiny_with("\"ab c\"", "\"ab zz\"")}}),
                      StatusCode::kInvalidArgument, {"tokenizer.json", "merge 1"});
    expect_load_error(testing::make_model_dir("merge_no_space", {{"tokenizer.json", tiny_with("\"ab c\"", "\"abc\"")}}),
                      StatusCode::kInvalidArgument, {"tokenizer.json", "merge 1"});
    expect_load_error(testing::make_model_dir("bad_id", {{"tokenizer.json", tiny_with("\"abc\": 15", "\"abc\": \"x\"")}}),
                      StatusCode::kInvalidArgument, {"tokenizer.json", "abc"});
    expect_load_error(testing::make_model_dir("bad_regex", {{"tokenizer.json", tiny_with("{\"String\": \" \"}", "{\"Regex\": \"(\"}")}}),
                      StatusCode::kInvalidArgument, {"tokenizer.json", "regex"});
    expect_load_error(testing::make_model_dir("bad_unk", {{"tokenizer.json", tiny_with("\"unk_token\": \"<unk>\"", "\"unk_token\": \"<nope>\"")}}),
                      StatusCode::kInvalidArgument, {"tokenizer.json", "unk_token"});
}

TEST(BadFilesTest, BadTokenizerConfig) {
    expect_load_error(testing::make_model_dir("bad_config", {{"tokenizer.json", testing::kTinyTokenizerJson},
                                                             {"tokenizer_config.json", "{not json"}}),
                      StatusCode::kInvalidArgument, {"tokenizer_config.json"});
    expect_load_error(testing::make_model_dir("bad_config_type", {{"tokenizer.json", testing::kTinyTokenizerJson},
                                                                  {"tokenizer_config.json", "{\"add_bos_token\": \"yes\"}"}}),
                      StatusCode::kInvalidArgument, {"tokenizer_config.json", "add_bos_token"});
    expect_load_error(testing::make_model_dir("bad_generation", {{"tokenizer.json", testing::kTinyTokenizerJson},
                                                                 {"generation_config.json", "{\"eos_token_id\": \"x\"}"}}),
                      StatusCode::kInvalidArgument, {"generation_config.json", "eos_token_id"});
}

}  // namespace
}  // namespace hichat::tokenizer
