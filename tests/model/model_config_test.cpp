#include "model/model_config.h"

#include <gtest/gtest.h>

#include "test_checkpoint_writer.h"

namespace hichat::model {
namespace {

using testing::Json;

const char kFile[] = "/ckpt/config.json";

Json base_config(const std::string& arch = "LlamaForCausalLM") {
    return {{"architectures", {arch}}, {"hidden_size", 64},       {"intermediate_size", 128},
            {"num_hidden_layers", 3},  {"num_attention_heads", 8}, {"num_key_value_heads", 2},
            {"vocab_size", 100},       {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
            {"rope_theta", 500000.0},  {"bos_token_id", 1},        {"eos_token_id", 2},
            {"torch_dtype", "bfloat16"}};
}

ModelConfig parse_ok(const Json& j) {
    Result<ModelConfig> cfg = parse_model_config(j.dump(), kFile);
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    return cfg.ok() ? cfg.value() : ModelConfig{};
}

// Asserts parsing fails and the message names the file and every one of `words`.
Status parse_error(const Json& j, std::vector<std::string> words) {
    Result<ModelConfig> cfg = parse_model_config(j.dump(), kFile);
    EXPECT_FALSE(cfg.ok());
    if (cfg.ok()) return ok_status();
    words.push_back(kFile);
    for (const std::string& w : words) EXPECT_NE(cfg.status().message().find(w), std::string::npos)
        << "'" << w << "' not in: " << cfg.status().message();
    return cfg.status();
}

TEST(ModelConfig, LlamaFieldsAndDerivedHeadDim) {
    ModelConfig cfg = parse_ok(base_config());
    EXPECT_EQ(cfg.arch, Architecture::kLlama);
    EXPECT_EQ(cfg.architecture_name, "LlamaForCausalLM");
    EXPECT_EQ(cfg.hidden_size, 64);
    EXPECT_EQ(cfg.intermediate_size, 128);
    EXPECT_EQ(cfg.num_layers, 3);
    EXPECT_EQ(cfg.num_heads, 8);
    EXPECT_EQ(cfg.num_kv_heads, 2);
    EXPECT_EQ(cfg.head_dim, 8);  // 64 / 8
    EXPECT_EQ(cfg.vocab_size, 100);
    EXPECT_EQ(cfg.max_position_embeddings, 4096);
    EXPECT_FLOAT_EQ(cfg.rms_norm_eps, 1e-5f);
    EXPECT_FLOAT_EQ(cfg.rope_theta, 500000.0f);
    EXPECT_EQ(cfg.rope.type, RopeType::kDefault);
    EXPECT_FALSE(cfg.tie_word_embeddings);
    EXPECT_FALSE(cfg.qkv_bias || cfg.o_bias || cfg.mlp_bias || cfg.qk_norm);
    EXPECT_EQ(cfg.bos_token_id, 1);
    EXPECT_EQ(cfg.eos_token_ids, std::vector<int>{2});
    EXPECT_EQ(cfg.torch_dtype, DType::kBF16);
}

TEST(ModelConfig, LlamaBiasesFollowAttentionBiasAndMlpBias) {
    Json j = base_config();
    j["attention_bias"] = true;
    j["mlp_bias"] = true;
    ModelConfig cfg = parse_ok(j);
    EXPECT_TRUE(cfg.qkv_bias);
    EXPECT_TRUE(cfg.o_bias);
    EXPECT_TRUE(cfg.mlp_bias);
}

TEST(ModelConfig, Qwen2AlwaysHasQkvBiasButNoOutputBias) {
    ModelConfig cfg = parse_ok(base_config("Qwen2ForCausalLM"));
    EXPECT_EQ(cfg.arch, Architecture::kQwen2);
    EXPECT_TRUE(cfg.qkv_bias);
    EXPECT_FALSE(cfg.o_bias);
    EXPECT_FALSE(cfg.mlp_bias);
    EXPECT_FALSE(cfg.qk_norm);
}

TEST(ModelConfig, Qwen3HasQkNormAndGivenHeadDim) {
    Json j = base_config("Qwen3ForCausalLM");
    j["head_dim"] = 16;  // != hidden / heads
    ModelConfig cfg = parse_ok(j);
    EXPECT_EQ(cfg.arch, Architecture::kQwen3);
    EXPECT_TRUE(cfg.qk_norm);
    EXPECT_FALSE(cfg.qkv_bias);
    EXPECT_EQ(cfg.head_dim, 16);
    j["attention_bias"] = true;
    cfg = parse_ok(j);
    EXPECT_TRUE(cfg.qkv_bias && cfg.o_bias);
}

TEST(ModelConfig, HeadDimAbsentOrNull) {
    Json j = base_config("Qwen3ForCausalLM");
    EXPECT_EQ(parse_ok(j).head_dim, 128);  // absent: Qwen3Config's default
    j["head_dim"] = nullptr;
    EXPECT_EQ(parse_ok(j).head_dim, 8);  // null: hidden / heads
    Json m = base_config("MistralForCausalLM");
    m["head_dim"] = nullptr;
    EXPECT_EQ(parse_ok(m).head_dim, 8);
    m["head_dim"] = 32;
    EXPECT_EQ(parse_ok(m).head_dim, 32);
}

TEST(ModelConfig, MistralHasNoBiases) {
    Json j = base_config("MistralForCausalLM");
    j["attention_bias"] = true;  // not a MistralConfig field: ignored
    ModelConfig cfg = parse_ok(j);
    EXPECT_EQ(cfg.arch, Architecture::kMistral);
    EXPECT_FALSE(cfg.qkv_bias || cfg.o_bias || cfg.mlp_bias || cfg.qk_norm);
}

TEST(ModelConfig, KvHeadsDefaultToHeads) {
    Json j = base_config();
    j.erase("num_key_value_heads");
    EXPECT_EQ(parse_ok(j).num_kv_heads, 8);
    j["num_key_value_heads"] = nullptr;
    EXPECT_EQ(parse_ok(j).num_kv_heads, 8);
}

TEST(ModelConfig, SpecialTokensAndDtypeSpellings) {
    Json j = base_config();
    j["eos_token_id"] = {128001, 128008, 128009};
    j.erase("bos_token_id");
    j.erase("torch_dtype");
    j["dtype"] = "float16";
    ModelConfig cfg = parse_ok(j);
    EXPECT_EQ(cfg.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
    EXPECT_EQ(cfg.bos_token_id, -1);
    EXPECT_EQ(cfg.torch_dtype, DType::kF16);
    j.erase("dtype");
    j["torch_dtype"] = "float32";
    j["eos_token_id"] = nullptr;
    cfg = parse_ok(j);
    EXPECT_EQ(cfg.torch_dtype, DType::kF32);
    EXPECT_TRUE(cfg.eos_token_ids.empty());
}

TEST(ModelConfig, TieWordEmbeddings) {
    Json j = base_config("Qwen2ForCausalLM");
    EXPECT_FALSE(parse_ok(j).tie_word_embeddings);  // Qwen2Config default
    j["tie_word_embeddings"] = true;
    EXPECT_TRUE(parse_ok(j).tie_word_embeddings);
}

Json llama3_scaling() {
    return {{"factor", 32.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", 8192}, {"rope_type", "llama3"}};
}

void expect_llama3(const ModelConfig& cfg) {
    EXPECT_EQ(cfg.rope.type, RopeType::kLlama3);
    EXPECT_FLOAT_EQ(cfg.rope_theta, 500000.0f);
    EXPECT_FLOAT_EQ(cfg.rope.factor, 32.0f);
    EXPECT_FLOAT_EQ(cfg.rope.low_freq_factor, 1.0f);
    EXPECT_FLOAT_EQ(cfg.rope.high_freq_factor, 4.0f);
    EXPECT_EQ(cfg.rope.original_max_position_embeddings, 8192);
}

TEST(ModelConfig, RopeOlderSpellingRopeScaling) {
    Json j = base_config();
    j["rope_scaling"] = llama3_scaling();
    expect_llama3(parse_ok(j));
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};  // "type": the oldest key
    ModelConfig cfg = parse_ok(j);
    EXPECT_EQ(cfg.rope.type, RopeType::kLinear);
    EXPECT_FLOAT_EQ(cfg.rope.factor, 2.0f);
}

TEST(ModelConfig, RopeNewerSpellingRopeParameters) {
    Json j = base_config();
    j.erase("rope_theta");
    Json params = llama3_scaling();
    params["rope_theta"] = 500000.0;
    j["rope_parameters"] = params;
    expect_llama3(parse_ok(j));
    j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
    ModelConfig cfg = parse_ok(j);
    EXPECT_EQ(cfg.rope.type, RopeType::kDefault);
    EXPECT_FLOAT_EQ(cfg.rope_theta, 1000000.0f);
}

TEST(ModelConfig, RopeDefaultsWhenAbsent) {
    Json j = base_config();
    j.erase("rope_theta");
    ModelConfig cfg = parse_ok(j);
    EXPECT_FLOAT_EQ(cfg.rope_theta, 10000.0f);
    EXPECT_EQ(cfg.rope.type, RopeType::kDefault);
    // llama3 without original_max_position_embeddings falls back to max_position_embeddings.
    Json s = llama3_scaling();
    s.erase("original_max_position_embeddings");
    j["rope_scaling"] = s;
    EXPECT_EQ(parse_ok(j).rope.original_max_position_embeddings, 4096);
}

TEST(ModelConfigErrors, MissingFile) {
    testing::TempDir dir;
    Result<ModelConfig> cfg = load_model_config(dir.path());
    ASSERT_FALSE(cfg.ok());
    EXPECT_EQ(cfg.status().code(), StatusCode::kNotFound);
    EXPECT_NE(cfg.status().message().find(dir.path() + "/config.json"), std::string::npos) << cfg.status().message();
}

TEST(ModelConfigErrors, BadJson) {
    Result<ModelConfig> cfg = parse_model_config("{\"hidden_size\": 64,", kFile);
    ASSERT_FALSE(cfg.ok());
    EXPECT_NE(cfg.status().message().find(kFile), std::string::npos);
    EXPECT_NE(cfg.status().message().find("bad JSON"), std::string::npos);
    EXPECT_FALSE(parse_model_config("[1, 2]", kFile).ok());
}

TEST(ModelConfigErrors, UnknownArchitectureListsSupported) {
    Status s = parse_error(base_config("GPT2LMHeadModel"), {"GPT2LMHeadModel", "LlamaForCausalLM", "MistralForCausalLM",
                                                             "Qwen2ForCausalLM", "Qwen3ForCausalLM"});
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
    Json j = base_config();
    j.erase("architectures");
    parse_error(j, {"architectures", "missing"});
}

TEST(ModelConfigErrors, MissingOrBadFields) {
    for (const char* field : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                              "vocab_size"}) {
        Json j = base_config();
        j.erase(field);
        parse_error(j, {std::string("'") + field + "'", "missing"});
        j[field] = "four";
        parse_error(j, {field, "integer"});
        j[field] = 0;
        parse_error(j, {field, "positive"});
    }
    Json j = base_config();
    j["tie_word_embeddings"] = "yes";
    parse_error(j, {"tie_word_embeddings"});
    j = base_config();
    j["eos_token_id"] = "</s>";
    parse_error(j, {"eos_token_id"});
    j = base_config();
    j["rms_norm_eps"] = -1.0;
    parse_error(j, {"rms_norm_eps"});
}

TEST(ModelConfigErrors, InconsistentSizes) {
    Json j = base_config();
    j["num_key_value_heads"] = 3;  // 8 heads
    parse_error(j, {"num_key_value_heads", "must divide"});
    j = base_config();
    j["num_attention_heads"] = 6;  // 64 not divisible by 6, no head_dim
    j["num_key_value_heads"] = 6;
    parse_error(j, {"num_attention_heads", "hidden_size"});
    j = base_config();
    j["head_dim"] = 7;
    parse_error(j, {"head_dim", "even"});
    j = base_config();
    j["num_hidden_layers"] = 1000000000;  // must not allocate a billion layers later
    parse_error(j, {"num_hidden_layers"});
}

TEST(ModelConfigErrors, UnsupportedRope) {
    Json j = base_config();
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    EXPECT_EQ(parse_error(j, {"rope_scaling.rope_type", "yarn"}).code(), StatusCode::kUnimplemented);
    j.erase("rope_scaling");
    j["rope_parameters"] = {{"rope_type", "dynamic"}, {"factor", 2.0}, {"rope_theta", 10000.0}};
    EXPECT_EQ(parse_error(j, {"rope_parameters.rope_type", "dynamic"}).code(), StatusCode::kUnimplemented);
    Json s = llama3_scaling();
    s.erase("factor");
    j.erase("rope_parameters");
    j["rope_scaling"] = s;
    parse_error(j, {"rope_scaling.factor", "missing"});
    s = llama3_scaling();
    s["high_freq_factor"] = 1.0;
    j["rope_scaling"] = s;
    parse_error(j, {"rope_scaling.high_freq_factor"});
    j = base_config();
    j["partial_rotary_factor"] = 0.5;
    parse_error(j, {"partial_rotary_factor"});
}

TEST(ModelConfigErrors, UnsupportedActivationAndDtype) {
    Json j = base_config();
    j["hidden_act"] = "gelu";
    parse_error(j, {"hidden_act", "gelu"});
    j = base_config();
    j["torch_dtype"] = "float8_e4m3fn";
    parse_error(j, {"torch_dtype", "float8_e4m3fn"});
}

}  // namespace
}  // namespace hichat::model

namespace hichat::model {
namespace {

// Found by model_config_fuzzer: 1e-55 is a positive double but 0 as the float the kernels use.
TEST(ModelConfig, RmsNormEpsThatUnderflowsAFloatIsRefused) {
    Json j = base_config();
    j["rms_norm_eps"] = 1e-55;
    parse_error(j, {"rms_norm_eps", "positive float"});
}

// Found by model_config_fuzzer (CI run of 74b94ab): each RoPE number was checked as a double, so a
// value that is valid as a double but 0 or inf as a float, or parameters that together divide a
// frequency down to 0, were accepted and would have rotated by NaN.
TEST(ModelConfig, RopeNumbersThatAreNotFiniteFloatsAreRefused) {
    Json j = base_config();
    j["rope_theta"] = 1e300;
    parse_error(j, {"rope_theta", "finite float"});
    j = base_config();
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 1e-50}};
    parse_error(j, {"rope_scaling.factor", "positive float"});
    j = base_config();
    j["rope_theta"] = 1e30;  // lowest frequency about 1e-30, divided by 3e38: 0
    j["rope_scaling"] = {{"type", "linear"}, {"factor", 3e38}};
    parse_error(j, {"RoPE parameters", "finite positive float"});
}

TEST(ModelConfig, HugeHeadDimIsRefused) {
    Json j = base_config();
    j["head_dim"] = 1 << 20;
    parse_error(j, {"head_dim", "more than the supported"});
}

}  // namespace
}  // namespace hichat::model
