#include "model/model_config.h"

#include <cmath>

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/mapped_file.h"
#include "model/json_fields.h"
#include "model/quant_config_reader.h"
#include "model/rope_config.h"

namespace hichat::model {
namespace {

struct ArchitectureInfo {
    const char* name;
    Architecture arch;
    int default_max_position_embeddings;  // transformers' <Arch>Config default
};

constexpr ArchitectureInfo kArchitectures[] = {
    {"LlamaForCausalLM", Architecture::kLlama, 2048},
    {"MistralForCausalLM", Architecture::kMistral, 4096 * 32},
    {"Qwen2ForCausalLM", Architecture::kQwen2, 32768},
    {"Qwen3ForCausalLM", Architecture::kQwen3, 32768},
};

constexpr int kQwen3DefaultHeadDim = 128;  // Qwen3Config.head_dim default when the field is absent
constexpr int kMaxLayers = 1 << 12;  // far above any real model; keeps a corrupt value from exhausting memory
constexpr int kMaxHeadDim = 1 << 12;  // real models use 64 to 256

const ArchitectureInfo& info_of(Architecture arch) {
    for (const ArchitectureInfo& info : kArchitectures) {
        if (info.arch == arch) return info;
    }
    return kArchitectures[0];
}

Status read_architecture(const JsonFields& f, ModelConfig& cfg) {
    const Json* list = f.find("architectures");
    if (list == nullptr) return f.error("architectures", "is missing");
    if (!list->is_array() || list->empty() || !(*list)[0].is_string()) {
        return f.error("architectures", "must be a non-empty list of strings, got " + list->dump());
    }
    cfg.architecture_name = (*list)[0].get<std::string>();
    std::string supported;
    for (const ArchitectureInfo& info : kArchitectures) {
        if (cfg.architecture_name == info.name) {
            cfg.arch = info.arch;
            return ok_status();
        }
        supported += supported.empty() ? info.name : std::string(", ") + info.name;
    }
    return unimplemented(f.file() + ": field 'architectures' names unsupported architecture '" +
                         cfg.architecture_name + "' (supported: " + supported + ")");
}

Status read_head_dim(const JsonFields& f, ModelConfig& cfg) {
    if (f.has("head_dim")) {
        Result<int> head_dim = f.get_positive_int("head_dim");
        if (!head_dim.ok()) return head_dim.status();
        cfg.head_dim = *head_dim;
        return ok_status();
    }
    // Absent (not null) in a Qwen3 file means Qwen3Config's default, as transformers reads it.
    if (cfg.arch == Architecture::kQwen3 && !f.contains("head_dim")) {
        cfg.head_dim = kQwen3DefaultHeadDim;
        return ok_status();
    }
    if (cfg.hidden_size % cfg.num_heads != 0) {
        return f.error("num_attention_heads", "must divide hidden_size (" + std::to_string(cfg.hidden_size) +
                                                  ") when head_dim is not given");
    }
    cfg.head_dim = cfg.hidden_size / cfg.num_heads;
    return ok_status();
}

Status read_sizes(const JsonFields& f, ModelConfig& cfg) {
    struct IntField {
        const char* key;
        int* out;
    };
    for (IntField field : {IntField{"hidden_size", &cfg.hidden_size},
                           IntField{"intermediate_size", &cfg.intermediate_size},
                           IntField{"num_hidden_layers", &cfg.num_layers},
                           IntField{"num_attention_heads", &cfg.num_heads},
                           IntField{"vocab_size", &cfg.vocab_size}}) {
        Result<int> v = f.get_positive_int(field.key);
        if (!v.ok()) return v.status();
        *field.out = *v;
    }
    cfg.num_kv_heads = cfg.num_heads;
    if (f.has("num_key_value_heads")) {
        Result<int> v = f.get_positive_int("num_key_value_heads");
        if (!v.ok()) return v.status();
        cfg.num_kv_heads = *v;
    }
    cfg.max_position_embeddings = info_of(cfg.arch).default_max_position_embeddings;
    if (f.has("max_position_embeddings")) {
        Result<int> v = f.get_positive_int("max_position_embeddings");
        if (!v.ok()) return v.status();
        cfg.max_position_embeddings = *v;
    }
    return read_head_dim(f, cfg);
}

Status read_norm_and_activation(const JsonFields& f, ModelConfig& cfg) {
    Result<double> eps = f.get_number_or("rms_norm_eps", 1e-6);  // 1e-6 in all four configs
    if (!eps.ok()) return eps.status();
    cfg.rms_norm_eps = static_cast<float>(*eps);
    // Checked as the float the kernels use: 1e-55 is positive as a double but 0 as a float.
    if (!(cfg.rms_norm_eps > 0.0f) || !std::isfinite(cfg.rms_norm_eps)) {
        return f.error("rms_norm_eps", "must be a positive float");
    }
    Result<std::string> act = f.get_string_or("hidden_act", "silu");
    if (!act.ok()) return act.status();
    if (*act != "silu") {
        return unimplemented(f.file() + ": field 'hidden_act' is '" + *act + "': only silu is implemented");
    }
    return ok_status();
}

// Which optional tensors the architecture has, as each transformers modeling file builds its layers.
Status read_tensor_options(const JsonFields& f, ModelConfig& cfg) {
    Result<bool> tie = f.get_bool_or("tie_word_embeddings", false);  // False in all four configs
    if (!tie.ok()) return tie.status();
    cfg.tie_word_embeddings = *tie;
    Result<bool> attention_bias = f.get_bool_or("attention_bias", false);
    if (!attention_bias.ok()) return attention_bias.status();
    Result<bool> mlp_bias = f.get_bool_or("mlp_bias", false);
    if (!mlp_bias.ok()) return mlp_bias.status();
    cfg.qkv_bias = cfg.o_bias = cfg.mlp_bias = cfg.qk_norm = false;
    switch (cfg.arch) {
        case Architecture::kLlama:  // LlamaAttention: bias=attention_bias on q/k/v/o; LlamaMLP: mlp_bias
            cfg.qkv_bias = cfg.o_bias = *attention_bias;
            cfg.mlp_bias = *mlp_bias;
            break;
        case Architecture::kMistral:  // no biases
            break;
        case Architecture::kQwen2:  // q/k/v always biased, o_proj never
            cfg.qkv_bias = true;
            break;
        case Architecture::kQwen3:  // bias=attention_bias on q/k/v/o; per-head q/k RMSNorm
            cfg.qkv_bias = cfg.o_bias = *attention_bias;
            cfg.qk_norm = true;
            break;
    }
    return ok_status();
}

Status read_token_id(const JsonFields& f, const char* key, const Json& v, std::vector<int>& out) {
    int64_t id = 0;
    if (!json_to_int(v, &id) || id < 0 || id > INT32_MAX) {
        return f.error(key, "must be a non-negative integer or a list of them, got " + v.dump());
    }
    out.push_back(static_cast<int>(id));
    return ok_status();
}

Status read_special_tokens(const JsonFields& f, ModelConfig& cfg) {
    cfg.bos_token_id = -1;
    if (const Json* bos = f.find("bos_token_id")) {
        std::vector<int> ids;
        HICHAT_RETURN_IF_ERROR(read_token_id(f, "bos_token_id", *bos, ids));
        cfg.bos_token_id = ids[0];
    }
    cfg.eos_token_ids.clear();
    const Json* eos = f.find("eos_token_id");
    if (eos == nullptr) return ok_status();
    if (!eos->is_array()) return read_token_id(f, "eos_token_id", *eos, cfg.eos_token_ids);
    for (const Json& id : *eos) HICHAT_RETURN_IF_ERROR(read_token_id(f, "eos_token_id", id, cfg.eos_token_ids));
    return ok_status();
}

// transformers 5 writes "dtype", older files "torch_dtype"; absent keeps the struct default.
Status read_dtype(const JsonFields& f, ModelConfig& cfg) {
    const char* key = f.has("dtype") ? "dtype" : "torch_dtype";
    if (!f.has(key)) return ok_status();
    Result<std::string> name = f.get_string(key);
    if (!name.ok()) return name.status();
    if (*name == "bfloat16") {
        cfg.torch_dtype = DType::kBF16;
    } else if (*name == "float16") {
        cfg.torch_dtype = DType::kF16;
    } else if (*name == "float32") {
        cfg.torch_dtype = DType::kF32;
    } else {
        return unimplemented(f.file() + ": field '" + key + "' is '" + *name +
                             "': only bfloat16, float16 and float32 are supported");
    }
    return ok_status();
}

Status validate(const JsonFields& f, const ModelConfig& cfg) {
    if (cfg.num_layers > kMaxLayers) {
        return f.error("num_hidden_layers", "is " + std::to_string(cfg.num_layers) + ", more than the supported " +
                                                std::to_string(kMaxLayers));
    }
    if (cfg.num_heads % cfg.num_kv_heads != 0) {
        return f.error("num_key_value_heads", "(" + std::to_string(cfg.num_kv_heads) +
                                                  ") must divide num_attention_heads (" +
                                                  std::to_string(cfg.num_heads) + ")");
    }
    if (cfg.head_dim % 2 != 0) {
        return f.error("head_dim", "must be even for rotary embeddings, got " + std::to_string(cfg.head_dim));
    }
    if (cfg.head_dim > kMaxHeadDim) {
        return f.error("head_dim", "is " + std::to_string(cfg.head_dim) + ", more than the supported " +
                                       std::to_string(kMaxHeadDim));
    }
    // Each parameter is a valid float, but together they can still leave a frequency of 0 or inf
    // (a linear factor of 1e38 divides the lowest ones to 0): the kernels would rotate by NaN.
    for (float freq : rope_inv_freq(cfg)) {
        if (!(freq > 0.0f) || !std::isfinite(freq)) {
            return invalid_argument(f.file() + ": the RoPE parameters (rope_theta " + std::to_string(cfg.rope_theta) +
                                    ", scaling factor " + std::to_string(cfg.rope.factor) +
                                    ") give a rotary frequency that is not a finite positive float");
        }
    }
    return ok_status();
}

}  // namespace

Result<ModelConfig> parse_model_config(const std::string& json_text, const std::string& file) {
    Result<Json> doc = parse_json(json_text, file);
    if (!doc.ok()) return doc.status();
    if (!doc->is_object()) return invalid_argument(file + ": top level must be a JSON object");
    JsonFields fields(*doc, file);
    ModelConfig cfg;
    HICHAT_RETURN_IF_ERROR(read_architecture(fields, cfg));
    HICHAT_RETURN_IF_ERROR(read_sizes(fields, cfg));
    HICHAT_RETURN_IF_ERROR(read_norm_and_activation(fields, cfg));
    HICHAT_RETURN_IF_ERROR(read_tensor_options(fields, cfg));
    HICHAT_RETURN_IF_ERROR(read_rope_config(fields, cfg));
    HICHAT_RETURN_IF_ERROR(read_special_tokens(fields, cfg));
    HICHAT_RETURN_IF_ERROR(read_dtype(fields, cfg));
    Result<QuantConfig> quant = read_quant_config(fields);
    if (!quant.ok()) return quant.status();
    cfg.quant = std::move(*quant);
    HICHAT_RETURN_IF_ERROR(validate(fields, cfg));
    return cfg;
}

Result<ModelConfig> load_model_config(const std::string& dir) {
    std::string file = dir + "/config.json";
    Result<std::string> text = read_file(file);
    if (!text.ok()) return text.status();
    Result<ModelConfig> cfg = parse_model_config(*text, file);
    if (!cfg.ok() || cfg->quant.quantized()) return cfg;
    const std::string modelopt_file = dir + "/hf_quant_config.json";
    if (!std::filesystem::exists(modelopt_file)) return cfg;  // not a ModelOpt export
    Result<std::string> modelopt_text = read_file(modelopt_file);
    if (!modelopt_text.ok()) return modelopt_text.status();
    Result<Json> doc = parse_json(*modelopt_text, modelopt_file);
    if (!doc.ok()) return doc.status();
    Result<QuantConfig> quant = read_modelopt_quant_file(JsonFields(*doc, modelopt_file));
    if (!quant.ok()) return quant.status();
    cfg->quant = std::move(*quant);
    return cfg;
}

}  // namespace hichat::model
