#include "model/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "test_checkpoint_writer.h"

namespace hichat::model {
namespace {

using testing::make_tensor;
using testing::make_tiny_model;
using testing::read_value;
using testing::test_value;
using testing::TempDir;
using testing::TinyModel;
using testing::TinyModelOptions;

// Every slot of ModelWeights under its Hugging Face name, as the transformers modeling files name them.
std::map<std::string, const WeightTensor*> slots_by_name(const ModelWeights& w) {
    std::map<std::string, const WeightTensor*> m = {
        {"model.embed_tokens.weight", &w.embed_tokens}, {"model.norm.weight", &w.final_norm},
        {"lm_head.weight", &w.lm_head}};
    for (size_t l = 0; l < w.layers.size(); ++l) {
        const LayerWeights& L = w.layers[l];
        std::string p = "model.layers." + std::to_string(l) + ".";
        std::string a = p + "self_attn.", f = p + "mlp.";
        m.insert({{p + "input_layernorm.weight", &L.attn_norm}, {p + "post_attention_layernorm.weight", &L.ffn_norm},
                  {a + "q_proj.weight", &L.q_proj}, {a + "k_proj.weight", &L.k_proj}, {a + "v_proj.weight", &L.v_proj},
                  {a + "o_proj.weight", &L.o_proj}, {a + "q_proj.bias", &L.q_bias}, {a + "k_proj.bias", &L.k_bias},
                  {a + "v_proj.bias", &L.v_bias}, {a + "o_proj.bias", &L.o_bias}, {a + "q_norm.weight", &L.q_norm},
                  {a + "k_norm.weight", &L.k_norm}, {f + "gate_proj.weight", &L.gate_proj},
                  {f + "up_proj.weight", &L.up_proj}, {f + "down_proj.weight", &L.down_proj},
                  {f + "gate_proj.bias", &L.gate_bias}, {f + "up_proj.bias", &L.up_bias},
                  {f + "down_proj.bias", &L.down_bias}});
    }
    return m;
}

DType dtype_of(const std::string& name) {
    return name == "F32" ? DType::kF32 : name == "F16" ? DType::kF16 : DType::kBF16;
}

// Each written tensor is in its slot with its shape, dtype and every value; every other slot is absent.
void expect_weights_match(const Checkpoint& ckpt, const TinyModel& model, bool tied) {
    std::map<std::string, const WeightTensor*> slots = slots_by_name(ckpt.weights());
    std::set<std::string> written;
    for (const testing::TensorData& t : model.tensors) {
        if (tied && t.name == "lm_head.weight") continue;  // ignored when tied
        written.insert(t.name);
        ASSERT_EQ(slots.count(t.name), 1u) << t.name;
        const WeightTensor& w = *slots[t.name];
        ASSERT_TRUE(w.present()) << t.name;
        EXPECT_EQ(w.shape, t.shape) << t.name;
        EXPECT_EQ(w.dtype, dtype_of(t.dtype)) << t.name;
        for (int64_t i = 0; i < w.num_elements(); ++i) {
            ASSERT_EQ(read_value(w, i), test_value(t.name, i)) << t.name << "[" << i << "]";
        }
    }
    for (const auto& [name, slot] : slots) {
        if (written.count(name) == 0 && name != "lm_head.weight") {
            EXPECT_FALSE(slot->present()) << name;
        }
    }
    const ModelWeights& w = ckpt.weights();
    if (tied) {
        EXPECT_EQ(w.lm_head.data, w.embed_tokens.data);
    } else {
        EXPECT_NE(w.lm_head.data, w.embed_tokens.data);
    }
    EXPECT_EQ(w.lm_head.shape, w.embed_tokens.shape);
}

using testing::open_error;
using testing::open_ok;

struct ArchCase {
    std::string architecture;
    std::string dtype;
};

void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.architecture << "/" << c.dtype; }

class ArchitectureLoads : public ::testing::TestWithParam<ArchCase> {};

TEST_P(ArchitectureLoads, ShapesAndValues) {
    TinyModelOptions opt;
    opt.architecture = GetParam().architecture;
    opt.dtype = GetParam().dtype;
    if (opt.architecture == "Qwen3ForCausalLM") opt.head_dim = 8;  // given, != hidden / heads
    TinyModel model = make_tiny_model(opt);
    TempDir dir;
    model.write(dir.path());
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
    ASSERT_NE(ckpt, nullptr);
    EXPECT_EQ(ckpt->dir(), dir.path());
    EXPECT_EQ(ckpt->config().architecture_name, opt.architecture);
    EXPECT_EQ(ckpt->config().head_dim, opt.head_dim > 0 ? opt.head_dim : 4);
    EXPECT_EQ(ckpt->weights().layers.size(), 2u);
    expect_weights_match(*ckpt, model, false);
    const LayerWeights& l1 = ckpt->weights().layers[1];
    const int64_t head_dim = ckpt->config().head_dim;
    EXPECT_EQ(l1.k_proj.shape, (std::vector<int64_t>{2 * head_dim, 16}));  // GQA: 2 kv heads
    EXPECT_EQ(l1.q_proj.shape, (std::vector<int64_t>{4 * head_dim, 16}));
    EXPECT_EQ(l1.q_bias.present(), opt.architecture == "Qwen2ForCausalLM");
    EXPECT_EQ(l1.q_norm.present(), opt.architecture == "Qwen3ForCausalLM");
}

INSTANTIATE_TEST_SUITE_P(
    All, ArchitectureLoads,
    ::testing::Values(ArchCase{"LlamaForCausalLM", "BF16"}, ArchCase{"LlamaForCausalLM", "F16"},
                      ArchCase{"LlamaForCausalLM", "F32"}, ArchCase{"MistralForCausalLM", "BF16"},
                      ArchCase{"MistralForCausalLM", "F16"}, ArchCase{"Qwen2ForCausalLM", "BF16"},
                      ArchCase{"Qwen2ForCausalLM", "F32"}, ArchCase{"Qwen3ForCausalLM", "BF16"},
                      ArchCase{"Qwen3ForCausalLM", "F16"}),
    [](const ::testing::TestParamInfo<ArchCase>& info) {
        return info.param.architecture.substr(0, info.param.architecture.find("For")) + "_" + info.param.dtype;
    });

TEST(Checkpoint, LlamaWithAllBiases) {
    TinyModelOptions opt;
    opt.attention_bias = opt.mlp_bias = true;
    TinyModel model = make_tiny_model(opt);
    TempDir dir;
    model.write(dir.path());
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
    ASSERT_NE(ckpt, nullptr);
    expect_weights_match(*ckpt, model, false);
    EXPECT_TRUE(ckpt->weights().layers[0].o_bias.present());
    EXPECT_TRUE(ckpt->weights().layers[1].down_bias.present());
}

TEST(Checkpoint, MultiHeadAndSingleKvHead) {
    for (int num_kv_heads : {4, 1}) {
        TinyModelOptions opt;
        opt.num_kv_heads = num_kv_heads;
        TinyModel model = make_tiny_model(opt);
        TempDir dir;
        model.write(dir.path());
        std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
        ASSERT_NE(ckpt, nullptr);
        EXPECT_EQ(ckpt->weights().layers[0].v_proj.rows(), 4 * num_kv_heads);
        expect_weights_match(*ckpt, model, false);
    }
}

TEST(Checkpoint, TiedEmbeddings) {
    for (bool write_lm_head : {false, true}) {
        TinyModelOptions opt;
        opt.architecture = "Qwen2ForCausalLM";
        opt.tie_word_embeddings = true;
        opt.write_lm_head_when_tied = write_lm_head;  // accepted and ignored
        TinyModel model = make_tiny_model(opt);
        TempDir dir;
        model.write(dir.path());
        std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
        ASSERT_NE(ckpt, nullptr);
        EXPECT_TRUE(ckpt->config().tie_word_embeddings);
        expect_weights_match(*ckpt, model, true);
    }
}

TEST(Checkpoint, IgnoresRotaryInvFreqBuffers) {
    TinyModel model = make_tiny_model({});
    model.tensors.push_back(make_tensor("model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {2}));
    model.tensors.push_back(make_tensor("model.layers.1.self_attn.rotary_emb.inv_freq", "F32", {2}));
    TempDir dir;
    model.write(dir.path());
    EXPECT_NE(open_ok(dir.path()), nullptr);
}

TEST(Checkpoint, ShardedIndex) {
    TinyModelOptions opt;
    opt.architecture = "Qwen3ForCausalLM";
    opt.head_dim = 8;
    TinyModel model = make_tiny_model(opt);
    TempDir dir;
    model.write_sharded(dir.path(), 3);
    std::unique_ptr<Checkpoint> ckpt = open_ok(dir.path());
    ASSERT_NE(ckpt, nullptr);
    expect_weights_match(*ckpt, model, false);
}

class CheckpointErrors : public ::testing::Test {
protected:
    std::string path(const std::string& file) const { return dir_.path() + "/" + file; }
    std::string single() const { return path("model.safetensors"); }
    std::string index() const { return path("model.safetensors.index.json"); }

    TempDir dir_;
    TinyModel model_ = make_tiny_model({});
};

TEST_F(CheckpointErrors, MissingConfig) {
    model_.write(dir_.path());
    std::filesystem::remove(path("config.json"));
    EXPECT_EQ(open_error(dir_.path(), {path("config.json")}).code(), StatusCode::kNotFound);
}

TEST_F(CheckpointErrors, BadConfigJson) {
    model_.write(dir_.path());
    testing::write_file(path("config.json"), "{\"architectures\": [\"LlamaForCausalLM\"],,}");
    open_error(dir_.path(), {path("config.json"), "bad JSON"});
}

TEST_F(CheckpointErrors, UnknownArchitecture) {
    model_.config["architectures"] = {"FalconForCausalLM"};
    model_.write(dir_.path());
    open_error(dir_.path(), {path("config.json"), "FalconForCausalLM", "Qwen3ForCausalLM"});
}

TEST_F(CheckpointErrors, MissingConfigField) {
    model_.config.erase("vocab_size");
    model_.write(dir_.path());
    open_error(dir_.path(), {path("config.json"), "'vocab_size'", "missing"});
}

TEST_F(CheckpointErrors, NoWeightFiles) {
    model_.write_config(dir_.path());
    EXPECT_EQ(open_error(dir_.path(), {dir_.path(), "model.safetensors"}).code(), StatusCode::kNotFound);
}

TEST_F(CheckpointErrors, MissingTensor) {
    model_.remove("model.layers.1.mlp.up_proj.weight");
    model_.write(dir_.path());
    open_error(dir_.path(), {single(), "missing tensor 'model.layers.1.mlp.up_proj.weight'"});
}

TEST_F(CheckpointErrors, UntiedWithoutLmHead) {
    model_.remove("lm_head.weight");
    model_.write(dir_.path());
    open_error(dir_.path(), {single(), "missing tensor 'lm_head.weight'"});
}

TEST_F(CheckpointErrors, ExtraTensor) {
    // A bias the config does not ask for (Llama without attention_bias) and an unknown tensor.
    model_.tensors.push_back(make_tensor("model.layers.0.self_attn.o_proj.bias", "BF16", {16}));
    model_.tensors.push_back(make_tensor("model.vision_tower.weight", "BF16", {2}));
    model_.write(dir_.path());
    open_error(dir_.path(), {"2 problems", single(), "unexpected tensor 'model.layers.0.self_attn.o_proj.bias'",
                             "unexpected tensor 'model.vision_tower.weight'"});
}

TEST_F(CheckpointErrors, MisshapedTensor) {
    *model_.find("model.layers.0.self_attn.k_proj.weight") =
        make_tensor("model.layers.0.self_attn.k_proj.weight", "BF16", {16, 16});  // as if kv heads == heads
    model_.write(dir_.path());
    open_error(dir_.path(), {single(), "'model.layers.0.self_attn.k_proj.weight'", "[16, 16]", "[8, 16]"});
}

TEST_F(CheckpointErrors, ManyProblemsAllListed) {
    model_.remove("model.norm.weight");
    model_.remove("model.embed_tokens.weight");
    model_.tensors.push_back(make_tensor("extra", "BF16", {1}));
    model_.write(dir_.path());
    open_error(dir_.path(), {"3 problems", "'model.norm.weight'", "'model.embed_tokens.weight'", "'extra'"});
}

TEST_F(CheckpointErrors, TruncatedFile) {
    model_.write(dir_.path());
    std::filesystem::resize_file(single(), std::filesystem::file_size(single()) - 10);
    // The last tensor in the data section is the last one written: lm_head.weight.
    Status s = open_error(dir_.path(), {single(), "'lm_head.weight'", "truncated"});
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
}

TEST_F(CheckpointErrors, BadHeaderLength) {
    model_.write(dir_.path());
    std::string bytes = testing::safetensors_image(model_.tensors);
    bytes[5] = 0x7f;  // header length ~ 2^46
    testing::write_file(single(), bytes);
    EXPECT_EQ(open_error(dir_.path(), {single(), "header length"}).code(), StatusCode::kDataLoss);
}

TEST_F(CheckpointErrors, UnsupportedDtype) {
    testing::TensorData* t = model_.find("model.norm.weight");
    t->dtype = "F64";
    t->bytes += t->bytes;  // 8 bytes per element
    model_.write(dir_.path());
    Status s = open_error(dir_.path(), {single(), "'model.norm.weight'", "unsupported dtype 'F64'"});
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
}

TEST_F(CheckpointErrors, MissingShard) {
    model_.write_sharded(dir_.path(), 2);
    std::filesystem::remove(path("model-00002-of-00002.safetensors"));
    Status s = open_error(dir_.path(), {index(), "model-00002-of-00002.safetensors"});
    EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST_F(CheckpointErrors, ShardedMissingTensorNamesIndex) {
    model_.remove("model.layers.0.mlp.gate_proj.weight");
    model_.write_sharded(dir_.path(), 2);
    open_error(dir_.path(), {index(), "missing tensor 'model.layers.0.mlp.gate_proj.weight'"});
}

TEST_F(CheckpointErrors, IndexPointsAtWrongShard) {
    model_.write_sharded(dir_.path(), 2);
    testing::Json idx = testing::Json::parse(R"({"weight_map": {}})");
    for (const testing::TensorData& t : model_.tensors) idx["weight_map"][t.name] = "model-00001-of-00002.safetensors";
    testing::write_file(index(), idx.dump());
    open_error(dir_.path(), {index(), "model-00001-of-00002.safetensors", "does not contain"});
}

TEST_F(CheckpointErrors, BadIndex) {
    model_.write_sharded(dir_.path(), 2);
    testing::write_file(index(), R"({"metadata": {}})");
    open_error(dir_.path(), {index(), "weight_map"});
    testing::write_file(index(), R"({"weight_map": {"model.norm.weight": "../escape.safetensors"}})");
    open_error(dir_.path(), {index(), "weight_map.model.norm.weight"});
    testing::write_file(index(), "{");
    open_error(dir_.path(), {index(), "bad JSON"});
}

TEST_F(CheckpointErrors, ShardWithMisshapedTensorNamesShard) {
    *model_.find("model.norm.weight") = make_tensor("model.norm.weight", "BF16", {17});
    model_.write_sharded(dir_.path(), 2);
    // The message names the shard that holds the tensor, not the index.
    open_error(dir_.path(), {"model-0000", ".safetensors: tensor 'model.norm.weight'", "[17]", "[16]"});
}

}  // namespace
}  // namespace hichat::model
