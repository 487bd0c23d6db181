// Test helpers: write tiny safetensors files and Hugging Face checkpoint folders in a temp dir.
// The tensor names here are written from the transformers modeling files independently of
// src/model/tensor_layout.cpp, so the loader is checked against a second reading of them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/weights.h"

namespace hichat::model::testing {

using Json = nlohmann::json;

struct TensorData {
    std::string name;
    std::string dtype;            // "BF16", "F16", "F32" or anything else, written as is
    std::vector<int64_t> shape;
    std::string bytes;            // raw little-endian data
};

// A value exactly representable in bf16, f16 and f32, distinct per (name, index) in practice.
float test_value(const std::string& name, int64_t index);

// A tensor filled with test_value(name, i), encoded in `dtype` (BF16/F16/F32).
TensorData make_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape);

// The bytes of a safetensors file: u64 LE header length, JSON header, data in the given order.
std::string safetensors_image(const std::vector<TensorData>& tensors);

void write_file(const std::string& path, const std::string& bytes);

// Element `index` of a loaded weight, decoded to float.
float read_value(const WeightTensor& t, int64_t index);
// Element `index` of a tensor to write (F32, F16 or BF16), decoded to float; throws for other dtypes.
float tensor_value(const TensorData& t, int64_t index);

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A tiny checkpoint: config.json contents and the tensors transformers would save for it.
struct TinyModel {
    Json config;
    std::vector<TensorData> tensors;

    TensorData* find(const std::string& name);
    void remove(const std::string& name);
    void write(const std::string& dir) const;                          // config.json + model.safetensors
    void write_sharded(const std::string& dir, int num_shards) const;  // + model.safetensors.index.json
    void write_config(const std::string& dir) const;
};

struct TinyModelOptions {
    std::string architecture = "LlamaForCausalLM";
    std::string dtype = "BF16";
    int hidden_size = 16;
    int num_heads = 4;
    int num_kv_heads = 2;
    int head_dim = 0;              // 0: not written (derived as hidden / heads)
    int intermediate_size = 24;
    int num_layers = 2;
    int vocab_size = 32;
    bool tie_word_embeddings = false;
    bool attention_bias = false;   // Llama, Qwen3
    bool mlp_bias = false;         // Llama
    bool write_lm_head_when_tied = false;
};

// Checkpoint::open(dir), expected to succeed (nullptr and a test failure otherwise).
std::unique_ptr<Checkpoint> open_ok(const std::string& dir);
// Checkpoint::open(dir), expected to fail with a message naming each of `words`.
Status open_error(const std::string& dir, const std::vector<std::string>& words);

// The config and tensors for `opt`, following each architecture's transformers modeling file.
TinyModel make_tiny_model(const TinyModelOptions& opt);

}  // namespace hichat::model::testing
