// FP8 checkpoints load in each producer's layout: FP8 weights bound with their scales and the
// scales' block grid, dequantized to the bf16 values a reference writer computed; bad scales,
// misplaced FP8 tensors and missing configs are errors naming the file and tensor.
#include <gtest/gtest.h>

#include <cstring>

#include "fp8_checkpoint_writer.h"
#include "model/checkpoint.h"
#include "model/fp8_dequant.h"
#include "model/host_weights.h"

namespace hichat::model {
namespace {

using testing::Fp8Checkpoint;
using testing::Fp8Layout;
using testing::TempDir;
using testing::TinyModel;

// Awkward sizes: no dimension is a multiple of a block (32 x 48 or 128 x 128).
TinyModel small_model() {
    return testing::make_tiny_model({.hidden_size = 40, .num_heads = 4, .num_kv_heads = 2,
                                     .intermediate_size = 56, .num_layers = 2, .vocab_size = 50});
}

using testing::open_error;
using testing::open_ok;

std::vector<const WeightTensor*> linear_slots(const ModelWeights& w) {
    std::vector<const WeightTensor*> out;
    for (const LayerWeights& l : w.layers) {
        for (const WeightTensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
            out.push_back(t);
        }
    }
    return out;
}

struct LayoutCase {
    Fp8Layout layout;
    std::string scale_dtype;
    int64_t block_rows, block_cols;  // 0: the weight's own rows / columns
};

class Fp8Loads : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(Fp8Loads, WeightsScalesAndDequantizedValues) {
    const LayoutCase& c = GetParam();
    const Fp8Checkpoint q = testing::quantize_fp8(small_model(), c.layout, c.scale_dtype);
    TempDir fp8_dir, ref_dir;
    q.write_fp8(fp8_dir.path());
    q.dequantized.write(ref_dir.path());
    std::unique_ptr<Checkpoint> fp8 = open_ok(fp8_dir.path()), ref = open_ok(ref_dir.path());
    ASSERT_TRUE(fp8 && ref);
    EXPECT_TRUE(fp8->config().quant.quantized());
    EXPECT_FALSE(ref->config().quant.quantized());

    const std::vector<const WeightTensor*> got = linear_slots(fp8->weights()), want = linear_slots(ref->weights());
    ASSERT_EQ(got.size(), want.size());
    HostWeights dequantized(fp8->weights(), 2);
    EXPECT_EQ(dequantized.num_dequantized(), static_cast<int64_t>(got.size()));
    const std::vector<const WeightTensor*> as_bf16 = linear_slots(dequantized.weights());
    for (size_t i = 0; i < got.size(); ++i) {
        const WeightTensor& t = *got[i];
        ASSERT_EQ(t.dtype, DType::kF8E4M3);
        EXPECT_EQ(t.scales.block_rows, c.block_rows > 0 ? c.block_rows : t.rows());
        EXPECT_EQ(t.scales.block_cols, c.block_cols > 0 ? c.block_cols : t.cols());
        EXPECT_EQ(t.scales.dtype, c.scale_dtype == "F32" ? DType::kF32 : c.scale_dtype == "F16" ? DType::kF16 : DType::kBF16);
        const bool static_input = c.layout == Fp8Layout::kCtTensorStatic || c.layout == Fp8Layout::kModelOpt;
        if (static_input) {
            EXPECT_NEAR(t.scales.input_scale, 0.02f, 1e-4f);
        } else {
            EXPECT_EQ(t.scales.input_scale, 0.0f);
        }
        const WeightTensor& d = *as_bf16[i];
        ASSERT_EQ(d.dtype, DType::kBF16);
        ASSERT_EQ(d.shape, want[i]->shape);
        ASSERT_EQ(std::memcmp(d.data, want[i]->data, static_cast<size_t>(d.num_elements()) * 2), 0) << "linear " << i;
    }
    // lm_head is ignored by every layout and stays bf16: copied as it is; norms stay shared views.
    const WeightTensor& head = fp8->weights().lm_head;
    EXPECT_EQ(head.dtype, DType::kBF16);
    EXPECT_EQ(dequantized.weights().lm_head.dtype, DType::kBF16);
    EXPECT_NE(dequantized.weights().lm_head.data, head.data);
    EXPECT_EQ(std::memcmp(dequantized.weights().lm_head.data, head.data, static_cast<size_t>(head.num_elements()) * 2), 0);
    EXPECT_EQ(dequantized.weights().final_norm.data, fp8->weights().final_norm.data);
    EXPECT_EQ(dequantized.num_copied(), static_cast<int64_t>(got.size()) + 1);
}

TEST_P(Fp8Loads, KvScalesUnderTheProducersNames) {
    const LayoutCase& c = GetParam();
    TempDir dir;
    testing::quantize_fp8(small_model(), c.layout, c.scale_dtype).write_fp8(dir.path());
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
    ASSERT_TRUE(ckpt);
    const bool has_kv = c.layout == Fp8Layout::kCtTensorStatic || c.layout == Fp8Layout::kModelOpt;
    EXPECT_EQ(ckpt->config().quant.kv_cache_fp8, has_kv);
    for (size_t l = 0; l < ckpt->weights().layers.size(); ++l) {
        const LayerWeights& layer = ckpt->weights().layers[l];
        EXPECT_EQ(layer.k_scale, has_kv ? 0.0625f * static_cast<float>(l + 1) : 0.0f) << l;
        EXPECT_EQ(layer.v_scale, has_kv ? 0.03125f * static_cast<float>(l + 3) : 0.0f) << l;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Fp8Loads,
    ::testing::Values(LayoutCase{Fp8Layout::kCtTensorStatic, "F32", 0, 0},
                      LayoutCase{Fp8Layout::kCtChannelDynamic, "BF16", 1, 0},
                      LayoutCase{Fp8Layout::kCtChannelDynamic, "F32", 1, 0},
                      LayoutCase{Fp8Layout::kCtBlock, "F16", 32, 48},
                      LayoutCase{Fp8Layout::kHfBlock, "F32", 128, 128},
                      LayoutCase{Fp8Layout::kModelOpt, "F32", 0, 0}),
    [](const auto& info) { return testing::fp8_layout_name(info.param.layout) + "_" + info.param.scale_dtype; });

class Fp8Errors : public ::testing::Test {
protected:
    std::string single() const { return dir_.path() + "/model.safetensors"; }
    Fp8Checkpoint q_ = testing::quantize_fp8(small_model(), Fp8Layout::kCtChannelDynamic);
    TempDir dir_;
};

TEST_F(Fp8Errors, MissingScale) {
    q_.fp8.remove("model.layers.1.mlp.up_proj.weight_scale");
    q_.write_fp8(dir_.path());
    open_error(dir_.path(), {"missing tensor 'model.layers.1.mlp.up_proj.weight_scale'",
                             "'model.layers.1.mlp.up_proj.weight'"});
}

TEST_F(Fp8Errors, MisshapedScale) {
    testing::TensorData* s = q_.fp8.find("model.layers.0.self_attn.k_proj.weight_scale");
    s->shape = {5, 4};  // 20 values, as if per-tensor blocks of 4 columns
    q_.write_fp8(dir_.path());
    open_error(dir_.path(), {single(), "'model.layers.0.self_attn.k_proj.weight_scale'", "[5, 4]", "per-channel",
                             "[20]", "[20, 1]"});
}

TEST_F(Fp8Errors, Fp8ScaleTensor) {
    testing::TensorData* s = q_.fp8.find("model.layers.0.mlp.down_proj.weight_scale");
    s->dtype = "F8_E4M3";
    s->bytes.resize(s->bytes.size() / 4);
    q_.write_fp8(dir_.path());
    open_error(dir_.path(), {"'model.layers.0.mlp.down_proj.weight_scale'", "F8_E4M3", "F32, BF16 or F16"});
}

TEST_F(Fp8Errors, Fp8NormWeight) {
    testing::TensorData* norm = q_.fp8.find("model.norm.weight");
    norm->dtype = "F8_E4M3";
    norm->bytes.resize(norm->bytes.size() / 2);
    q_.write_fp8(dir_.path());
    open_error(dir_.path(), {single(), "'model.norm.weight'", "only the weights of linear layers can be FP8"});
}

TEST_F(Fp8Errors, Fp8WithoutQuantizationConfig) {
    q_.fp8.config.erase("quantization_config");
    q_.write_fp8(dir_.path());
    open_error(dir_.path(), {"'model.layers.0.self_attn.q_proj.weight'", "no quantization_config"});
}

TEST_F(Fp8Errors, StaticActivationsWithoutInputScale) {
    Fp8Checkpoint q = testing::quantize_fp8(small_model(), Fp8Layout::kCtTensorStatic);
    q.fp8.remove("model.layers.0.mlp.gate_proj.input_scale");
    q.write_fp8(dir_.path());
    open_error(dir_.path(), {"missing tensor 'model.layers.0.mlp.gate_proj.input_scale'", "static"});
}

TEST_F(Fp8Errors, NonPositiveKvScale) {
    Fp8Checkpoint q = testing::quantize_fp8(small_model(), Fp8Layout::kModelOpt);
    testing::TensorData* k = q.fp8.find("model.layers.1.self_attn.k_proj.k_scale");
    const float zero = 0.0f;
    k->bytes.assign(reinterpret_cast<const char*>(&zero), 4);
    q.write_fp8(dir_.path());
    open_error(dir_.path(), {"'model.layers.1.self_attn.k_proj.k_scale'", "positive finite"});
}

// AutoFP8's one deprecated `kv_scale` per layer serves as both scales.
TEST_F(Fp8Errors, OneKvScaleServesBothKAndV) {
    Fp8Checkpoint q = testing::quantize_fp8(small_model(), Fp8Layout::kModelOpt);
    q.fp8.remove("model.layers.0.self_attn.k_proj.k_scale");
    q.fp8.remove("model.layers.0.self_attn.v_proj.v_scale");
    const float half = 0.5f;
    q.fp8.tensors.push_back({"model.layers.0.self_attn.kv_scale", "F32", {}, std::string(reinterpret_cast<const char*>(&half), 4)});
    q.write_fp8(dir_.path());
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir_.path());
    ASSERT_TRUE(ckpt);
    EXPECT_EQ(ckpt->weights().layers[0].k_scale, 0.5f);
    EXPECT_EQ(ckpt->weights().layers[0].v_scale, 0.5f);
    EXPECT_EQ(ckpt->weights().layers[1].k_scale, 0.125f);   // the other layer keeps its own
}

TEST_F(Fp8Errors, BlockScalesOfAnotherGrid) {
    Fp8Checkpoint q = testing::quantize_fp8(small_model(), Fp8Layout::kHfBlock);
    q.fp8.config["quantization_config"]["weight_block_size"] = {16, 16};  // the file has [128, 128] scales
    q.write_fp8(dir_.path());
    Status s = open_error(dir_.path(), {"weight_scale_inv'", "[1, 1]", "block weight scales [16, 16]"});
    EXPECT_NE(s.message().find("problems"), std::string::npos) << s.message();  // every weight is listed
}

TEST_F(Fp8Errors, ScaleBesideABf16Weight) {
    // A bf16 checkpoint (no quantization_config) with a stray weight scale: an unexpected tensor.
    TinyModel m = small_model();
    m.tensors.push_back(testing::make_tensor("model.layers.0.mlp.up_proj.weight_scale", "F32", {56, 1}));
    m.write(dir_.path());
    open_error(dir_.path(), {"unexpected tensor 'model.layers.0.mlp.up_proj.weight_scale'"});
}

}  // namespace
}  // namespace hichat::model
