// quantization_config (and ModelOpt's hf_quant_config.json) as config.json's readers see it: the FP8
// formats in the producers' own spellings, and every other method or option refused by field name.
#include "model/quant_config.h"

#include <gtest/gtest.h>

#include <functional>

#include "model/model_config.h"
#include "test_checkpoint_writer.h"

namespace hichat::model {
namespace {

using testing::Json;

const char kFile[] = "/ckpt/config.json";

Json base_config() {
    return {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 64},  {"intermediate_size", 128},
            {"num_hidden_layers", 2},  {"num_attention_heads", 8}, {"num_key_value_heads", 2},
            {"vocab_size", 100},       {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
            {"rope_theta", 500000.0},  {"bos_token_id", 1},        {"eos_token_id", 2},
            {"torch_dtype", "bfloat16"}};
}

Json fp8_args(const std::string& strategy, bool dynamic) {
    return {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"strategy", strategy}, {"dynamic", dynamic}};
}

// llm-compressor's FP8_DYNAMIC scheme as saved by compressed-tensors.
Json ct_dynamic() {
    return {{"quant_method", "compressed-tensors"},
            {"format", "float-quantized"},
            {"quantization_status", "compressed"},
            {"config_groups",
             {{"group_0",
               {{"targets", {"Linear"}}, {"weights", fp8_args("channel", false)}, {"input_activations", fp8_args("token", true)},
                {"output_activations", nullptr}}}}},
            {"ignore", {"lm_head", "re:.*mlp.down_proj$"}},
            {"kv_cache_scheme", nullptr}};
}

QuantConfig parse_ok(const Json& qc) {
    Json c = base_config();
    c["quantization_config"] = qc;
    Result<ModelConfig> cfg = parse_model_config(c.dump(), kFile);
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    return cfg.ok() ? cfg->quant : QuantConfig{};
}

// Parsing fails with `code`, naming the file and each of `words`.
void parse_error(const Json& qc, StatusCode code, std::vector<std::string> words) {
    Json c = base_config();
    c["quantization_config"] = qc;
    Result<ModelConfig> cfg = parse_model_config(c.dump(), kFile);
    ASSERT_FALSE(cfg.ok()) << qc.dump();
    EXPECT_EQ(cfg.status().code(), code) << cfg.status().message();
    words.push_back(kFile);
    for (const std::string& w : words) {
        EXPECT_NE(cfg.status().message().find(w), std::string::npos) << "'" << w << "' not in: " << cfg.status().message();
    }
}

Json& group0(Json& qc) { return qc["config_groups"]["group_0"]; }

TEST(QuantConfig, NoneWhenAbsent) {
    Result<ModelConfig> cfg = parse_model_config(base_config().dump(), kFile);
    ASSERT_TRUE(cfg.ok());
    EXPECT_FALSE(cfg->quant.quantized());
    EXPECT_FALSE(cfg->quant.quantizes("model.layers.0.mlp.up_proj"));
}

TEST(QuantConfig, CompressedTensorsDynamicPerChannel) {
    QuantConfig q = parse_ok(ct_dynamic());
    EXPECT_EQ(q.method, QuantMethod::kCompressedTensors);
    EXPECT_EQ(q.weight_scale, WeightScaleKind::kChannel);
    EXPECT_EQ(q.activations, ActivationQuant::kDynamicToken);
    EXPECT_EQ(q.scale_name, "weight_scale");
    EXPECT_FALSE(q.kv_cache_fp8);
    EXPECT_TRUE(q.quantizes("model.layers.0.mlp.up_proj"));
    EXPECT_FALSE(q.quantizes("lm_head"));
    EXPECT_FALSE(q.quantizes("model.layers.1.mlp.down_proj"));  // re: matches from the start
    EXPECT_EQ(q.describe(), "compressed-tensors FP8, per-channel weight scales, dynamic per-token activations");
}

TEST(QuantConfig, CompressedTensorsStaticPerTensorWithKvScales) {
    Json qc = ct_dynamic();
    group0(qc)["weights"] = fp8_args("tensor", false);
    group0(qc)["input_activations"] = fp8_args("tensor", false);
    qc["kv_cache_scheme"] = fp8_args("tensor", false);
    QuantConfig q = parse_ok(qc);
    EXPECT_EQ(q.weight_scale, WeightScaleKind::kTensor);
    EXPECT_EQ(q.activations, ActivationQuant::kStaticTensor);
    EXPECT_TRUE(q.kv_cache_fp8);
}

TEST(QuantConfig, CompressedTensorsBlock) {
    Json qc = ct_dynamic();
    group0(qc)["weights"] = fp8_args("block", false);
    group0(qc)["weights"]["block_structure"] = {128, 128};
    group0(qc)["input_activations"] = fp8_args("group", true);
    group0(qc)["input_activations"]["group_size"] = 128;
    QuantConfig q = parse_ok(qc);
    EXPECT_EQ(q.weight_scale, WeightScaleKind::kBlock);
    EXPECT_EQ(q.block_rows, 128);
    EXPECT_EQ(q.block_cols, 128);
    EXPECT_EQ(q.activations, ActivationQuant::kDynamicGroup);
    EXPECT_EQ(q.activation_group, 128);
}

TEST(QuantConfig, CompressedTensorsWeightOnly) {
    Json qc = ct_dynamic();
    group0(qc)["input_activations"] = nullptr;
    EXPECT_EQ(parse_ok(qc).activations, ActivationQuant::kNone);
}

TEST(QuantConfig, HfFp8BlockAndPerTensor) {
    QuantConfig block = parse_ok({{"quant_method", "fp8"}, {"activation_scheme", "dynamic"},
                                  {"weight_block_size", {128, 128}}, {"modules_to_not_convert", {"lm_head"}}});
    EXPECT_EQ(block.method, QuantMethod::kHfFp8);
    EXPECT_EQ(block.weight_scale, WeightScaleKind::kBlock);
    EXPECT_EQ(block.scale_name, "weight_scale_inv");
    EXPECT_EQ(block.activations, ActivationQuant::kDynamicGroup);
    EXPECT_FALSE(block.quantizes("lm_head"));
    QuantConfig tensor = parse_ok({{"quant_method", "fp8"}, {"activation_scheme", "static"}});
    EXPECT_EQ(tensor.weight_scale, WeightScaleKind::kTensor);
    EXPECT_EQ(tensor.activations, ActivationQuant::kStaticTensor);
    EXPECT_EQ(tensor.scale_name, "weight_scale");
}

TEST(QuantConfig, ModelOptInConfigAndFnmatchExclusions) {
    QuantConfig q = parse_ok({{"quant_method", "modelopt"}, {"quant_algo", "FP8_PER_CHANNEL_PER_TOKEN"},
                              {"kv_cache_quant_algo", "FP8"}, {"exclude_modules", {"lm_head", "*.layers.1.*"}}});
    EXPECT_EQ(q.method, QuantMethod::kModelOpt);
    EXPECT_EQ(q.weight_scale, WeightScaleKind::kChannel);
    EXPECT_EQ(q.activations, ActivationQuant::kDynamicToken);
    EXPECT_TRUE(q.kv_cache_fp8);
    EXPECT_TRUE(q.quantizes("model.layers.0.self_attn.q_proj"));
    EXPECT_FALSE(q.quantizes("model.layers.1.self_attn.q_proj"));
}

TEST(QuantConfig, ModelOptFileBesideConfig) {
    testing::TempDir dir;
    testing::write_file(dir.path() + "/config.json", base_config().dump());
    testing::write_file(dir.path() + "/hf_quant_config.json",
                        Json{{"producer", {{"name", "modelopt"}}}, {"quantization", {{"quant_algo", "FP8"}}}}.dump());
    Result<ModelConfig> cfg = load_model_config(dir.path());
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    EXPECT_EQ(cfg->quant.method, QuantMethod::kModelOpt);
    EXPECT_EQ(cfg->quant.activations, ActivationQuant::kStaticTensor);

    testing::write_file(dir.path() + "/hf_quant_config.json",
                        Json{{"quantization", {{"quant_algo", "NVFP4"}}}}.dump());
    Result<ModelConfig> bad = load_model_config(dir.path());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("hf_quant_config.json"), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find("quantization.quant_algo"), std::string::npos) << bad.status().message();
}

TEST(QuantConfig, OtherMethodsRefusedByName) {
    for (const char* method : {"bitsandbytes", "fbgemm_fp8", "mxfp4", "hqq"}) {
        parse_error({{"quant_method", method}, {"bits", 4}}, StatusCode::kUnimplemented,
                    {"quantization_config.quant_method", method, "FP8", "gptq"});
    }
    // The integer methods load (int_checkpoint_test.cpp), but not every bit width or layout.
    parse_error({{"quant_method", "gptq"}, {"bits", 8}, {"group_size", 128}}, StatusCode::kUnimplemented,
                {"quantization_config.bits", "8"});
    parse_error({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"version", "exllama"}},
                StatusCode::kUnimplemented, {"quantization_config.version", "exllama"});
    parse_error({{"quant_method", "modelopt"}, {"quant_algo", "W4A8_AWQ"}}, StatusCode::kUnimplemented,
                {"quantization_config.quant_algo", "W4A8_AWQ"});
    parse_error({{"quant_method", "fp8"}, {"fmt", "e5m2"}}, StatusCode::kUnimplemented, {"quantization_config.fmt", "e5m2"});
    parse_error({{"quant_method", "fp8"}, {"weight_block_size", {128}}}, StatusCode::kInvalidArgument,
                {"quantization_config.weight_block_size"});
    parse_error("fp8", StatusCode::kInvalidArgument, {"quantization_config", "object"});
}

TEST(QuantConfig, CompressedTensorsOptionsRefusedByName) {
    const std::string w = "quantization_config.config_groups.group_0.weights.";
    const std::string a = "quantization_config.config_groups.group_0.input_activations.";
    struct Case {
        std::function<void(Json&)> edit;
        std::vector<std::string> words;
    };
    const std::vector<Case> cases = {
        {[](Json& q) { group0(q)["weights"]["num_bits"] = 4; }, {w + "num_bits", "4"}},
        {[](Json& q) { group0(q)["weights"]["type"] = "int"; }, {w + "type", "\"int\""}},
        {[](Json& q) { group0(q)["weights"]["strategy"] = "group"; }, {w + "strategy", "\"group\""}},
        {[](Json& q) { group0(q)["weights"]["dynamic"] = true; }, {w + "dynamic"}},
        {[](Json& q) { group0(q)["weights"]["symmetric"] = false; }, {w + "symmetric"}},
        {[](Json& q) { group0(q)["input_activations"]["dynamic"] = false; }, {a + "strategy", "static"}},
        {[](Json& q) { q["format"] = "pack-quantized"; group0(q)["format"] = "pack-quantized"; },
         {"format", "pack-quantized"}},
        {[](Json& q) { group0(q)["targets"] = {"Linear", "Embedding"}; }, {"group_0.targets"}},
        {[](Json& q) { group0(q)["output_activations"] = fp8_args("token", true); }, {"group_0.output_activations"}},
        {[](Json& q) { q["config_groups"]["group_1"] = group0(q); }, {"quantization_config.config_groups", "2"}},
        {[](Json& q) { q["sparsity_config"] = {{"format", "sparse-24-bitmask"}}; }, {"quantization_config.sparsity_config"}},
        {[](Json& q) { q["quantization_status"] = "calibration"; }, {"quantization_config.quantization_status"}},
        {[](Json& q) { q["kv_cache_scheme"] = fp8_args("channel", false); },
         {"quantization_config.kv_cache_scheme.strategy", "\"channel\""}},
    };
    for (const Case& c : cases) {
        Json qc = ct_dynamic();
        c.edit(qc);
        parse_error(qc, StatusCode::kUnimplemented, c.words);
    }
    Json no_weights = ct_dynamic();
    group0(no_weights).erase("weights");
    parse_error(no_weights, StatusCode::kInvalidArgument, {"group_0.weights"});
    Json no_block = ct_dynamic();
    group0(no_block)["weights"] = fp8_args("block", false);
    parse_error(no_block, StatusCode::kInvalidArgument, {w + "block_structure"});
}

}  // namespace
}  // namespace hichat::model
