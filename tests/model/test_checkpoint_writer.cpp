#include "test_checkpoint_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "base/dtype.h"

namespace hichat::model::testing {

float test_value(const std::string& name, int64_t index) {
    uint32_t h = 2166136261u;  // FNV-1a of the name
    for (unsigned char c : name) h = (h ^ c) * 16777619u;
    int64_t k = static_cast<int64_t>((h % 97u + static_cast<uint64_t>(index) * 13u) % 97u) - 48;
    return static_cast<float>(k) / 16.0f;  // 7 significant bits at most: exact in bf16
}

TensorData make_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::string bytes;
    for (int64_t i = 0; i < n; ++i) {
        float v = test_value(name, i);
        if (dtype == "F32") {
            bytes.append(reinterpret_cast<const char*>(&v), 4);
            continue;
        }
        uint16_t h = dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v);
        bytes.append(reinterpret_cast<const char*>(&h), 2);
    }
    return TensorData{name, dtype, std::move(shape), std::move(bytes)};
}

std::string safetensors_image(const std::vector<TensorData>& tensors) {
    Json header = Json::object();
    header["__metadata__"] = {{"format", "pt"}};
    size_t offset = 0;
    for (const TensorData& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    while (text.size() % 8 != 0) text += ' ';  // the format pads the header to 8 bytes
    std::string out;
    uint64_t len = text.size();
    for (int i = 0; i < 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
    out += text;
    for (const TensorData& t : tensors) out += t.bytes;
    return out;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

float read_value(const WeightTensor& t, int64_t index) {
    const auto* p = static_cast<const unsigned char*>(t.data) + index * dtype_size_bytes(t.dtype);
    if (t.dtype == DType::kF32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t.dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
}

float tensor_value(const TensorData& t, int64_t index) {
    if (t.dtype == "F32") {
        float f;
        std::memcpy(&f, t.bytes.data() + 4 * index, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, t.bytes.data() + 2 * index, 2);
    if (t.dtype == "F16") return f16_to_f32(h);
    if (t.dtype == "BF16") return bf16_to_f32(h);
    throw std::runtime_error("cannot read " + t.dtype + " tensor " + t.name + " as float");
}

std::unique_ptr<Checkpoint> open_ok(const std::string& dir) {
    Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status().message();
    return ckpt.ok() ? std::move(ckpt.value()) : nullptr;
}

Status open_error(const std::string& dir, const std::vector<std::string>& words) {
    Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(dir);
    EXPECT_FALSE(ckpt.ok());
    if (ckpt.ok()) return ok_status();
    for (const std::string& w : words) {
        EXPECT_NE(ckpt.status().message().find(w), std::string::npos) << "'" << w << "' not in " << ckpt.status().message();
    }
    return ckpt.status();
}

TempDir::TempDir() {
    static std::atomic<int> counter{0};
    auto dir = std::filesystem::temp_directory_path() /
               ("hichat_model_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    path_ = dir.string();
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

TensorData* TinyModel::find(const std::string& name) {
    for (TensorData& t : tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

void TinyModel::remove(const std::string& name) {
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const TensorData& t) { return t.name == name; }),
                  tensors.end());
}

void TinyModel::write_config(const std::string& dir) const { write_file(dir + "/config.json", config.dump(2)); }

void TinyModel::write(const std::string& dir) const {
    write_config(dir);
    write_file(dir + "/model.safetensors", safetensors_image(tensors));
}

void TinyModel::write_sharded(const std::string& dir, int num_shards) const {
    write_config(dir);
    Json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", Json::object()}};
    for (int s = 0; s < num_shards; ++s) {
        std::string shard = "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(num_shards) +
                            ".safetensors";
        std::vector<TensorData> part;
        for (size_t i = static_cast<size_t>(s); i < tensors.size(); i += static_cast<size_t>(num_shards)) {
            part.push_back(tensors[i]);
            index["weight_map"][tensors[i].name] = shard;
        }
        write_file(dir + "/" + shard, safetensors_image(part));
    }
    write_file(dir + "/model.safetensors.index.json", index.dump(2));
}

namespace {

Json tiny_config(const TinyModelOptions& opt) {
    Json c = {{"architectures", {opt.architecture}},
              {"hidden_size", opt.hidden_size},
              {"intermediate_size", opt.intermediate_size},
              {"num_hidden_layers", opt.num_layers},
              {"num_attention_heads", opt.num_heads},
              {"num_key_value_heads", opt.num_kv_heads},
              {"vocab_size", opt.vocab_size},
              {"max_position_embeddings", 256},
              {"rms_norm_eps", 1e-5},
              {"rope_theta", 10000.0},
              {"hidden_act", "silu"},
              {"tie_word_embeddings", opt.tie_word_embeddings},
              {"bos_token_id", 1},
              {"eos_token_id", 2},
              {"torch_dtype", opt.dtype == "F32" ? "float32" : opt.dtype == "F16" ? "float16" : "bfloat16"}};
    if (opt.head_dim > 0) c["head_dim"] = opt.head_dim;
    if (opt.architecture == "LlamaForCausalLM") {
        c["attention_bias"] = opt.attention_bias;
        c["mlp_bias"] = opt.mlp_bias;
    }
    if (opt.architecture == "Qwen3ForCausalLM") c["attention_bias"] = opt.attention_bias;
    return c;
}

}  // namespace

TinyModel make_tiny_model(const TinyModelOptions& opt) {
    const std::string& arch = opt.architecture;
    const int64_t head_dim = opt.head_dim > 0 ? opt.head_dim : opt.hidden_size / opt.num_heads;
    const int64_t hidden = opt.hidden_size, inter = opt.intermediate_size;
    const int64_t q_dim = opt.num_heads * head_dim, kv_dim = opt.num_kv_heads * head_dim;
    const bool llama = arch == "LlamaForCausalLM", qwen2 = arch == "Qwen2ForCausalLM", qwen3 = arch == "Qwen3ForCausalLM";
    const bool qkv_bias = qwen2 || ((llama || qwen3) && opt.attention_bias);
    const bool o_bias = (llama || qwen3) && opt.attention_bias;
    const bool mlp_bias = llama && opt.mlp_bias;

    TinyModel m;
    m.config = tiny_config(opt);
    auto add = [&](const std::string& name, std::vector<int64_t> shape) {
        m.tensors.push_back(make_tensor(name, opt.dtype, std::move(shape)));
    };
    add("model.embed_tokens.weight", {opt.vocab_size, hidden});
    for (int l = 0; l < opt.num_layers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        add(p + "input_layernorm.weight", {hidden});
        add(p + "self_attn.q_proj.weight", {q_dim, hidden});
        add(p + "self_attn.k_proj.weight", {kv_dim, hidden});
        add(p + "self_attn.v_proj.weight", {kv_dim, hidden});
        add(p + "self_attn.o_proj.weight", {hidden, q_dim});
        if (qkv_bias) {
            add(p + "self_attn.q_proj.bias", {q_dim});
            add(p + "self_attn.k_proj.bias", {kv_dim});
            add(p + "self_attn.v_proj.bias", {kv_dim});
        }
        if (o_bias) add(p + "self_attn.o_proj.bias", {hidden});
        if (qwen3) {
            add(p + "self_attn.q_norm.weight", {head_dim});
            add(p + "self_attn.k_norm.weight", {head_dim});
        }
        add(p + "post_attention_layernorm.weight", {hidden});
        add(p + "mlp.gate_proj.weight", {inter, hidden});
        add(p + "mlp.up_proj.weight", {inter, hidden});
        add(p + "mlp.down_proj.weight", {hidden, inter});
        if (mlp_bias) {
            add(p + "mlp.gate_proj.bias", {inter});
            add(p + "mlp.up_proj.bias", {inter});
            add(p + "mlp.down_proj.bias", {hidden});
        }
    }
    add("model.norm.weight", {hidden});
    if (!opt.tie_word_embeddings || opt.write_lm_head_when_tied) add("lm_head.weight", {opt.vocab_size, hidden});
    return m;
}

}  // namespace hichat::model::testing
