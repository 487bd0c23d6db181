// ModelConfig: the hyper-parameters of a checkpoint, read once from config.json.
#pragma once

#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/quant_config.h"

namespace hichat::model {

enum class Architecture { kLlama, kMistral, kQwen2, kQwen3 };
enum class RopeType { kDefault, kLinear, kLlama3 };

struct RopeScaling {
    RopeType type = RopeType::kDefault;
    float factor = 1.0f;                        // linear and llama3
    float low_freq_factor = 1.0f;               // llama3
    float high_freq_factor = 4.0f;              // llama3
    int original_max_position_embeddings = 8192;  // llama3; absent: max_position_embeddings (transformers 5)
};

struct ModelConfig {
    Architecture arch = Architecture::kLlama;
    std::string architecture_name;     // as spelled in config.json, e.g. "LlamaForCausalLM"
    int hidden_size = 0;
    int intermediate_size = 0;
    int num_layers = 0;
    int num_heads = 0;
    int num_kv_heads = 0;              // == num_heads without grouped-query attention (and when absent)
    int head_dim = 0;                  // given, or hidden_size / num_heads; a Qwen3 file without the
                                       // field gets Qwen3Config's default, 128
    int vocab_size = 0;
    int max_position_embeddings = 0;   // absent: the architecture's transformers default
    float rms_norm_eps = 1e-6f;        // absent: 1e-6 (all four transformers configs)
    float rope_theta = 10000.0f;       // top level or inside rope_parameters; absent: 10000
    RopeScaling rope;
    bool tie_word_embeddings = false;  // absent: false (all four transformers configs)
    bool qkv_bias = false;             // q/k/v projections have biases (Qwen2; Llama attention_bias)
    bool o_bias = false;               // o_proj has a bias (Llama attention_bias)
    bool mlp_bias = false;             // gate/up/down have biases (Llama mlp_bias)
    bool qk_norm = false;              // per-head RMSNorm on q and k (Qwen3)
    int bos_token_id = -1;             // -1 if absent
    std::vector<int> eos_token_ids;    // may be empty
    DType torch_dtype = DType::kBF16;  // "dtype" or "torch_dtype" in config.json; absent: kBF16
    QuantConfig quant;                 // quantization_config, or ModelOpt's hf_quant_config.json
};

// Reads `dir`/config.json. Errors name the file and the field: missing file (kNotFound), bad JSON,
// missing, mistyped, out-of-range or inconsistent fields (kInvalidArgument); unknown architecture,
// rope types other than default/linear/llama3, activations other than silu, dtypes other than
// bfloat16/float16/float32, quantization other than the FP8 formats of quant_config.h (kUnimplemented).
// A ModelOpt folder's hf_quant_config.json is read when config.json has no quantization_config.
Result<ModelConfig> load_model_config(const std::string& dir);

// Parses config.json text; `file` only names it in errors.
Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& file);

// RoPE inverse frequencies [head_dim / 2] with the config's scaling applied (default, linear, llama3),
// as transformers computes them in float32.
std::vector<float> rope_inv_freq(const ModelConfig& cfg);

}  // namespace hichat::model
