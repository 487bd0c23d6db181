// Integer checkpoints (GPTQ, AWQ, compressed-tensors pack-quantized and int-quantized) written by
// tests/model/int_checkpoint_writer from known integers load to exactly those integers, scales, zero
// points and column groups, repacked in the kernels' layouts (base/q4_layout.h, int8 rows); bad files
// and configs are one error naming the field or tensor.
#include <gtest/gtest.h>

#include <cstring>

#include "base/q4_layout.h"
#include "common/fixtures.h"
#include "int_checkpoint_writer.h"
#include "model/checkpoint.h"

namespace hichat::model {
namespace {

using testing::IntCheckpoint;
using testing::Json;
using testing::IntLayout;
using testing::IntLinear;
using testing::TempDir;
using testing::open_error;
using testing::open_ok;

const WeightTensor& slot_of(const ModelWeights& w, const std::string& module) {
    const std::string prefix = "model.layers.";
    const size_t dot = module.find('.', prefix.size());
    const LayerWeights& l = w.layers.at(std::stoul(module.substr(prefix.size(), dot - prefix.size())));
    const std::string part = module.substr(module.rfind('.') + 1);
    const std::pair<const char*, const WeightTensor*> parts[] = {
        {"q_proj", &l.q_proj}, {"k_proj", &l.k_proj}, {"v_proj", &l.v_proj}, {"o_proj", &l.o_proj},
        {"gate_proj", &l.gate_proj}, {"up_proj", &l.up_proj}, {"down_proj", &l.down_proj}};
    for (const auto& [name, t] : parts) {
        if (part == name) return *t;
    }
    ADD_FAILURE() << "no slot for " << module;
    return l.q_proj;
}

// The loaded 4-bit weight holds, at each stored column, the known code of the column it reads
// (input_order), its group's scale (as f16) and zero code.
void expect_q4_equal(const WeightTensor& t, const IntLinear& want) {
    ASSERT_EQ(t.dtype, DType::kQ4) << want.module;
    ASSERT_EQ(t.shape, (std::vector<int64_t>{want.n, want.k})) << want.module;
    const int64_t groups32 = q4_groups(want.k);
    const auto* scales = static_cast<const uint16_t*>(t.scales.data);
    int64_t mismatches = 0;
    for (int64_t r = 0; r < want.n; ++r) {
        const auto* row = static_cast<const uint8_t*>(t.data) + r * q4_row_bytes(want.k);
        for (int64_t c = 0; c < want.k; ++c) {
            const int64_t col = t.scales.input_order ? t.scales.input_order[c] : c;
            const int64_t g = want.group_of_col[col];
            const int64_t g32 = r * groups32 + c / kQ4Group;
            const int zero = t.scales.zeros ? t.scales.zeros[g32] : kQ4ZeroCode;
            const bool ok = q4_code(row, c) == want.q[r * want.k + col] && zero == want.zero[r * want.groups + g] &&
                            f16_to_f32(scales[g32]) == want.scale[r * want.groups + g];
            if (!ok && ++mismatches <= 3) {
                ADD_FAILURE() << want.module << " [" << r << ", " << c << "] (column " << col << "): code "
                              << q4_code(row, c) << " vs " << want.q[r * want.k + col] << ", zero " << zero << " vs "
                              << want.zero[r * want.groups + g] << ", scale " << f16_to_f32(scales[g32]) << " vs "
                              << want.scale[r * want.groups + g];
            }
        }
    }
    EXPECT_EQ(mismatches, 0) << want.module;
}

void expect_int8_equal(const WeightTensor& t, const IntLinear& want) {
    ASSERT_EQ(t.dtype, DType::kI8) << want.module;
    ASSERT_EQ(t.scales.dtype, DType::kF32);
    const auto* codes = static_cast<const int8_t*>(t.data);
    const auto* scales = static_cast<const float*>(t.scales.data);
    int64_t mismatches = 0;
    for (int64_t r = 0; r < want.n; ++r) {
        mismatches += scales[r] != want.scale[r];
        for (int64_t c = 0; c < want.k; ++c) mismatches += codes[r * want.k + c] != want.q[r * want.k + c];
    }
    EXPECT_EQ(mismatches, 0) << want.module;
}

class IntLoads : public ::testing::TestWithParam<std::tuple<std::string, IntLayout>> {
protected:
    // Groups of 128 (the fixtures' 160-column down_proj ends in a partial group); act-order layouts
    // take groups of 32, so that every layer (64 or 128 columns) has several groups to reorder.
    IntCheckpoint make() const {
        const auto& [fixture, layout] = GetParam();
        const bool act_order = testing::int_layout_act_order(layout);
        return testing::quantize_int(testing::read_checkpoint(hichat::testing::fixture_dir(fixture)), layout,
                                     act_order ? 32 : 128);
    }
};

TEST_P(IntLoads, CodesScalesZerosAndGroupsAreTheWrittenIntegers) {
    const IntCheckpoint q = make();
    TempDir dir;
    q.packed.write(dir.path());
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
    ASSERT_TRUE(ckpt);
    const QuantConfig& cfg = ckpt->config().quant;
    EXPECT_TRUE(cfg.quantized());
    EXPECT_NE(cfg.packing, IntPacking::kNone);
    ASSERT_FALSE(q.linears.empty());
    for (const IntLinear& l : q.linears) {
        const WeightTensor& t = slot_of(ckpt->weights(), l.module);
        if (l.bits == 4) {
            expect_q4_equal(t, l);
        } else {
            expect_int8_equal(t, l);
        }
    }
    // The projections that share an input share one order (the kernels quantize it once).
    for (const LayerWeights& l : ckpt->weights().layers) {
        EXPECT_EQ(l.q_proj.scales.input_order, l.v_proj.scales.input_order);
        EXPECT_EQ(l.gate_proj.scales.input_order, l.up_proj.scales.input_order);
    }
    const IntLayout layout = std::get<1>(GetParam());
    const bool act_order = testing::int_layout_act_order(layout);
    EXPECT_EQ(ckpt->weights().layers[0].q_proj.scales.input_order != nullptr, act_order);
    EXPECT_EQ(cfg.act_order, act_order);
    std::printf("[int load] %s/%s: %s\n", std::get<0>(GetParam()).c_str(), testing::int_layout_name(layout).c_str(),
                cfg.describe().c_str());
}

TEST_P(IntLoads, ShardedFilesLoadTheSame) {
    const IntCheckpoint q = make();
    TempDir dir;
    q.packed.write_sharded(dir.path(), 3);
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
    ASSERT_TRUE(ckpt);
    const IntLinear& l = q.linears.back();
    if (l.bits == 4) {
        expect_q4_equal(slot_of(ckpt->weights(), l.module), l);
    } else {
        expect_int8_equal(slot_of(ckpt->weights(), l.module), l);
    }
}

INSTANTIATE_TEST_SUITE_P(Layouts, IntLoads,
                         ::testing::Combine(::testing::Values("llama3", "qwen2"),
                                            ::testing::ValuesIn(testing::all_int_layouts())),
                         [](const auto& info) {
                             return std::get<0>(info.param) + "_" + testing::int_layout_name(std::get<1>(info.param));
                         });

// ---- Bad files and configs: one error naming the tensor or field. ----

class IntErrors : public ::testing::Test {
protected:
    IntCheckpoint make(IntLayout layout) {
        return testing::quantize_int(testing::read_checkpoint(hichat::testing::fixture_dir("llama3")), layout);
    }
    Json& qc(IntCheckpoint& q) { return q.packed.config["quantization_config"]; }
    TempDir dir_;
};

TEST_F(IntErrors, WrongPackingDimensions) {
    IntCheckpoint q = make(IntLayout::kGptq);
    testing::TensorData* t = q.packed.find("model.layers.0.mlp.down_proj.qweight");
    ASSERT_NE(t, nullptr);
    std::swap(t->shape[0], t->shape[1]);
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"'model.layers.0.mlp.down_proj.qweight'", "has shape", "needs"});
}

TEST_F(IntErrors, MissingScales) {
    IntCheckpoint q = make(IntLayout::kAwq);
    q.packed.remove("model.layers.1.self_attn.o_proj.scales");
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"missing tensor 'model.layers.1.self_attn.o_proj.scales'"});
}

TEST_F(IntErrors, MissingZeroPoints) {
    IntCheckpoint q = make(IntLayout::kCtW4A16Asym);
    q.packed.remove("model.layers.0.mlp.up_proj.weight_zero_point");
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"missing tensor 'model.layers.0.mlp.up_proj.weight_zero_point'", "zero points"});
}

TEST_F(IntErrors, MissingGroupIndexOfActOrder) {
    IntCheckpoint q = make(IntLayout::kGptqActOrder);
    q.packed.remove("model.layers.0.self_attn.k_proj.g_idx");
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"missing tensor 'model.layers.0.self_attn.k_proj.g_idx'"});
}

TEST_F(IntErrors, MissingCodes) {
    IntCheckpoint q = make(IntLayout::kCtW4A16);
    q.packed.remove("model.layers.1.mlp.gate_proj.weight_packed");
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"missing tensor 'model.layers.1.mlp.gate_proj.weight_packed'"});
}

TEST_F(IntErrors, ScalesOfTheWrongDtype) {
    IntCheckpoint q = make(IntLayout::kGptq);
    testing::TensorData* t = q.packed.find("model.layers.0.self_attn.q_proj.scales");
    ASSERT_NE(t, nullptr);
    t->dtype = "I32";
    t->bytes.resize(t->bytes.size() * 2);
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"'model.layers.0.self_attn.q_proj.scales'", "is I32", "F32, BF16 or F16"});
}

TEST_F(IntErrors, UnsupportedBits) {
    IntCheckpoint q = make(IntLayout::kGptq);
    qc(q)["bits"] = 3;
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"quantization_config.bits", "3"});
}

TEST_F(IntErrors, UnsupportedGroupSize) {
    IntCheckpoint q = make(IntLayout::kAwq);
    qc(q)["group_size"] = 48;
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"quantization_config.group_size", "48", "multiple of 32"});
}

TEST_F(IntErrors, OtherKernelLayoutsAreRefused) {
    IntCheckpoint awq = make(IntLayout::kAwq);
    qc(awq)["version"] = "gemv";
    awq.packed.write(dir_.path());
    open_error(dir_.path(), {"quantization_config.version", "gemv"});
    IntCheckpoint gptq = make(IntLayout::kGptq);
    qc(gptq)["checkpoint_format"] = "marlin";
    TempDir other;
    gptq.packed.write(other.path());
    open_error(other.path(), {"quantization_config.checkpoint_format", "marlin"});
}

TEST_F(IntErrors, CompressedTensorsOptionsHiChatDoesNotRun) {
    IntCheckpoint a = make(IntLayout::kCtW8A8);
    qc(a)["config_groups"]["group_0"]["input_activations"]["dynamic"] = false;
    qc(a)["config_groups"]["group_0"]["input_activations"]["strategy"] = "tensor";
    a.packed.write(dir_.path());
    open_error(dir_.path(), {"input_activations.strategy", "tensor", "static"});
    IntCheckpoint b = make(IntLayout::kCtW8A16);
    qc(b)["config_groups"]["group_0"]["weights"]["symmetric"] = false;
    TempDir other;
    b.packed.write(other.path());
    open_error(other.path(), {"weights.symmetric", "symmetric only"});
}

TEST_F(IntErrors, GroupIndexOutOfRange) {
    IntCheckpoint q = make(IntLayout::kGptqActOrder);
    testing::TensorData* t = q.packed.find("model.layers.1.mlp.down_proj.g_idx");
    ASSERT_NE(t, nullptr);
    const int32_t bad = 99;
    std::memcpy(t->bytes.data() + 4 * 5, &bad, 4);
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"model.layers.1.mlp.down_proj.g_idx", "group 99"});
}

TEST_F(IntErrors, FusedProjectionsQuantizedDifferently) {
    // v_proj left in float while q_proj and k_proj are 4-bit: they run as one product.
    IntCheckpoint q = make(IntLayout::kGptq);
    const std::string v = "model.layers.0.self_attn.v_proj";
    for (const char* part : {".qweight", ".qzeros", ".scales", ".g_idx"}) q.packed.remove(v + part);
    const testing::TensorData* plain = q.dequantized.find(v + ".weight");
    ASSERT_NE(plain, nullptr);
    q.packed.tensors.push_back(*plain);
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"model.layers.0.self_attn", "quantized alike"});
}

// AutoGPTQ stores a bias for every linear layer, zeros where the model has none: taken and dropped;
// a nonzero one on a model without biases is an unexpected tensor.
TEST_F(IntErrors, ZeroBiasesOfGptqLayersLoadAndANonzeroOneIsUnexpected) {
    IntCheckpoint q = make(IntLayout::kGptq);
    for (const IntLinear& l : q.linears) {
        q.packed.tensors.push_back({l.module + ".bias", "F16", {l.n}, std::string(static_cast<size_t>(2 * l.n), '\0')});
    }
    q.packed.write(dir_.path());
    ASSERT_TRUE(open_ok(dir_.path()));
    testing::TensorData* bias = q.packed.find(q.linears[3].module + ".bias");
    ASSERT_NE(bias, nullptr);
    bias->bytes[0] = 0x3c;  // f16 1.0 has bytes 00 3c
    bias->bytes[1] = 0x3c;
    TempDir other;
    q.packed.write(other.path());
    open_error(other.path(), {"unexpected tensor '" + q.linears[3].module + ".bias'"});
}

TEST_F(IntErrors, IntegerTensorOutsideALinearLayer) {
    IntCheckpoint q = make(IntLayout::kCtW8A8);
    testing::TensorData* norm = q.packed.find("model.norm.weight");
    ASSERT_NE(norm, nullptr);
    norm->dtype = "I8";
    norm->bytes.resize(norm->bytes.size() / 2);
    q.packed.write(dir_.path());
    open_error(dir_.path(), {"'model.norm.weight'", "is I8"});
}

}  // namespace
}  // namespace hichat::model
