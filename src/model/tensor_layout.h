// The Hugging Face tensor names and shapes a checkpoint must hold for a ModelConfig, and where each
// goes in ModelWeights (internal to model/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "model/weights.h"

namespace hichat::model {

struct ExpectedTensor {
    std::string name;             // e.g. "model.layers.3.self_attn.q_proj.weight"
    std::vector<int64_t> shape;   // what the config implies
    WeightTensor* slot;           // where the view goes; points into the ModelWeights passed in
    bool linear = false;          // a linear layer's weight ("<module>.weight"): may be FP8 with scales
};

// Every tensor `cfg` requires, in load order. Resizes weights.layers to cfg.num_layers first, so
// the slots stay valid while `weights` is not resized. lm_head.weight only when untied.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& cfg, ModelWeights& weights);

// Tensors a checkpoint may hold that the model does not use: rotary_emb.inv_freq buffers, and
// lm_head.weight when the embeddings are tied (transformers drops it on load).
bool is_ignored_tensor(std::string_view name, const ModelConfig& cfg);

// "[2048, 4096]": a shape for error messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace hichat::model
