#include "model/quant_config.h"

#include <fnmatch.h>

#include <optional>
#include <regex>

#include "model/quant_config_reader.h"

namespace hichat::model {
namespace {

constexpr const char* kSupported =
    "HiChat reads FP8 checkpoints (compressed-tensors float-quantized, quant_method fp8, modelopt FP8) and "
    "integer ones (gptq, awq, compressed-tensors pack-quantized and int-quantized)";

Result<std::vector<std::string>> read_string_list(const JsonFields& f, std::string_view key) {
    std::vector<std::string> out;
    const Json* list = f.find(key);
    if (list == nullptr) return out;
    if (!list->is_array()) return f.error(key, "must be a list of strings, got " + list->dump());
    for (const Json& item : *list) {
        if (!item.is_string()) return f.error(key, "must be a list of strings, got " + list->dump());
        out.push_back(item.get<std::string>());
    }
    return out;
}

// A field that must hold `expected` when present (e.g. num_bits 8, type "float").
Status expect_value(const JsonFields& f, std::string_view key, const Json& expected, std::string_view why) {
    const Json* v = f.find(key);
    if (v == nullptr || *v == expected) return ok_status();
    return unsupported(f, key, *v, why);
}

Result<bool> read_dynamic(const JsonFields& f) {
    const Json* v = f.find("dynamic");
    if (v == nullptr) return false;
    if (v->is_boolean()) return v->get<bool>();
    return unsupported(f, "dynamic", *v, "only true and false are supported");
}

// The FP8 part every compressed-tensors QuantizationArgs shares: 8 bits, float, symmetric.
Status check_fp8_args(const JsonFields& f) {
    HICHAT_RETURN_IF_ERROR(expect_value(f, "num_bits", 8, "FP8 is 8 bits"));
    HICHAT_RETURN_IF_ERROR(expect_value(f, "type", "float", std::string("only float (FP8) quantization: ") + kSupported));
    HICHAT_RETURN_IF_ERROR(expect_value(f, "symmetric", true, "FP8 scales are symmetric"));
    const Json* actorder = f.find("actorder");
    if (actorder != nullptr && !(actorder->is_boolean() && !actorder->get<bool>())) {
        return unsupported(f, "actorder", *actorder, "activation ordering is for integer weights");
    }
    return ok_status();
}

Status read_block(const JsonFields& f, std::string_view key, QuantConfig& q) {
    const Json* block = f.find(key);
    if (block == nullptr) return f.error(key, "is missing (block scales need their [rows, columns])");
    int64_t rows = 0, cols = 0;
    if (!block->is_array() || block->size() != 2 || !json_to_int((*block)[0], &rows) ||
        !json_to_int((*block)[1], &cols) || rows < 1 || cols < 1 || rows > 65536 || cols > 65536) {
        return f.error(key, "must be two positive integers [rows, columns], got " + block->dump());
    }
    q.weight_scale = WeightScaleKind::kBlock;
    q.block_rows = static_cast<int>(rows);
    q.block_cols = static_cast<int>(cols);
    return ok_status();
}

Status read_ct_weights(const JsonFields& f, QuantConfig& q) {
    HICHAT_RETURN_IF_ERROR(check_fp8_args(f));
    Result<bool> dynamic = read_dynamic(f);
    if (!dynamic.ok()) return dynamic.status();
    if (*dynamic) return unsupported(f, "dynamic", true, "weight scales must be stored in the checkpoint");
    Result<std::string> strategy = f.get_string("strategy");
    if (!strategy.ok()) return strategy.status();
    if (*strategy == "tensor") {
        q.weight_scale = WeightScaleKind::kTensor;
    } else if (*strategy == "channel") {
        q.weight_scale = WeightScaleKind::kChannel;
    } else if (*strategy == "block") {
        HICHAT_RETURN_IF_ERROR(read_block(f, "block_structure", q));
    } else {
        return unsupported(f, "strategy", *strategy, "FP8 weights take tensor, channel or block scales");
    }
    return ok_status();
}

Status read_ct_activations(const JsonFields& f, QuantConfig& q) {
    HICHAT_RETURN_IF_ERROR(check_fp8_args(f));
    Result<bool> dynamic = read_dynamic(f);
    if (!dynamic.ok()) return dynamic.status();
    Result<std::string> strategy = f.get_string("strategy");
    if (!strategy.ok()) return strategy.status();
    if (*strategy == "tensor" && !*dynamic) {
        q.activations = ActivationQuant::kStaticTensor;
    } else if (*strategy == "token" && *dynamic) {
        q.activations = ActivationQuant::kDynamicToken;
    } else if (*strategy == "group" && *dynamic) {
        Result<int> group = f.get_positive_int("group_size");
        if (!group.ok()) return group.status();
        q.activations = ActivationQuant::kDynamicGroup;
        q.activation_group = *group;
    } else {
        return unsupported(f, "strategy", *strategy,
                           std::string(*dynamic ? "dynamic" : "static") +
                               " FP8 activations take static tensor, dynamic token or dynamic group scales");
    }
    return ok_status();
}

Status read_ct_kv_scheme(const JsonFields& f, QuantConfig& q) {
    HICHAT_RETURN_IF_ERROR(check_fp8_args(f));
    Result<std::string> strategy = f.get_string_or("strategy", "tensor");
    if (!strategy.ok()) return strategy.status();
    if (*strategy != "tensor") return unsupported(f, "strategy", *strategy, "KV cache scales must be per layer (tensor)");
    q.kv_cache_fp8 = true;
    return ok_status();
}

// compressed-tensors: one config group of FP8 Linear layers.
Status read_compressed_tensors(const JsonFields& f, QuantConfig& q) {
    q.method = QuantMethod::kCompressedTensors;
    if (const Json* sparsity = f.find("sparsity_config"); sparsity != nullptr && !sparsity->empty()) {
        return unsupported(f, "sparsity_config", *sparsity, "sparse checkpoints are not supported");
    }
    Result<std::string> status = f.get_string_or("quantization_status", "compressed");
    if (!status.ok()) return status.status();
    if (*status != "compressed" && *status != "frozen") {
        return unsupported(f, "quantization_status", *status, "only compressed (saved) checkpoints load");
    }
    const Json* groups = f.find("config_groups");
    if (groups == nullptr || !groups->is_object() || groups->empty()) {
        return f.error("config_groups", "must be an object with one quantization group");
    }
    if (groups->size() != 1) return unsupported(f, "config_groups", groups->size(), "one quantization group is supported");
    const std::string group_name = groups->begin().key();
    JsonFields g(groups->begin().value(), f.file(), f.field_name("config_groups." + group_name + "."));
    Result<std::string> format = g.has("format") ? g.get_string("format") : f.get_string_or("format", "float-quantized");
    if (!format.ok()) return format.status();
    Result<std::vector<std::string>> targets = read_string_list(g, "targets");
    if (!targets.ok()) return targets.status();
    if (*targets != std::vector<std::string>{"Linear"}) {
        return unsupported(g, "targets", *g.find("targets"), "the group must target [\"Linear\"]");
    }
    const Json* weights = g.find("weights");
    if (weights == nullptr || !weights->is_object()) return g.error("weights", "must be an object");
    const JsonFields w(*weights, f.file(), g.field_name("weights."));
    const Json* acts = g.find("input_activations");
    if (acts != nullptr && !acts->is_object()) return g.error("input_activations", "must be an object or null");
    const std::optional<JsonFields> a =
        acts ? std::optional<JsonFields>(JsonFields(*acts, f.file(), g.field_name("input_activations."))) : std::nullopt;
    if (w.find("type") != nullptr && *w.find("type") == "int") {
        HICHAT_RETURN_IF_ERROR(read_ct_int(w, a ? &*a : nullptr, *format, q));
    } else {
        if (*format != "float-quantized" && *format != "naive-quantized") {
            return unsupported(g.has("format") ? g : f, "format", *format, kSupported);
        }
        HICHAT_RETURN_IF_ERROR(read_ct_weights(w, q));
        if (a) HICHAT_RETURN_IF_ERROR(read_ct_activations(*a, q));
    }
    if (const Json* out = g.find("output_activations")) {
        return unsupported(g, "output_activations", *out, "output activations are not quantized by HiChat");
    }
    Result<std::vector<std::string>> ignore = read_string_list(f, "ignore");
    if (!ignore.ok()) return ignore.status();
    q.ignore = std::move(*ignore);
    if (const Json* kv = f.find("kv_cache_scheme")) {
        if (!kv->is_object()) return f.error("kv_cache_scheme", "must be an object or null");
        HICHAT_RETURN_IF_ERROR(read_ct_kv_scheme(JsonFields(*kv, f.file(), f.field_name("kv_cache_scheme.")), q));
    }
    return ok_status();
}

// transformers' FineGrainedFP8 (weight_block_size, `weight_scale_inv`) and AutoFP8 (per-tensor).
Status read_hf_fp8(const JsonFields& f, QuantConfig& q) {
    q.method = QuantMethod::kHfFp8;
    Result<std::string> fmt = f.get_string_or("fmt", "e4m3");
    if (!fmt.ok()) return fmt.status();
    if (*fmt != "e4m3") return unsupported(f, "fmt", *fmt, "only e4m3 FP8 is supported");
    Result<std::string> scheme = f.get_string_or("activation_scheme", "dynamic");
    if (!scheme.ok()) return scheme.status();
    if (*scheme != "dynamic" && *scheme != "static") {
        return unsupported(f, "activation_scheme", *scheme, "only dynamic and static are defined");
    }
    if (f.has("weight_block_size")) {
        HICHAT_RETURN_IF_ERROR(read_block(f, "weight_block_size", q));
        if (*scheme != "dynamic") {
            return unsupported(f, "activation_scheme", *scheme, "block-scaled FP8 takes dynamic activations");
        }
        q.scale_name = "weight_scale_inv";
        q.activations = ActivationQuant::kDynamicGroup;
        q.activation_group = q.block_cols;
    } else {
        q.weight_scale = WeightScaleKind::kTensor;
        q.activations = *scheme == "static" ? ActivationQuant::kStaticTensor : ActivationQuant::kDynamicToken;
    }
    for (const char* key : {"modules_to_not_convert", "ignored_layers"}) {
        Result<std::vector<std::string>> names = read_string_list(f, key);
        if (!names.ok()) return names.status();
        q.ignore.insert(q.ignore.end(), names->begin(), names->end());
    }
    return ok_status();
}

// ModelOpt's fields, in hf_quant_config.json's "quantization" or (newer exports) quantization_config.
Status read_modelopt(const JsonFields& f, QuantConfig& q) {
    q.method = QuantMethod::kModelOpt;
    Result<std::string> algo = f.get_string("quant_algo");
    if (!algo.ok()) return algo.status();
    if (*algo == "FP8") {
        q.weight_scale = WeightScaleKind::kTensor;
        q.activations = ActivationQuant::kStaticTensor;
    } else if (*algo == "FP8_PER_CHANNEL_PER_TOKEN") {
        q.weight_scale = WeightScaleKind::kChannel;
        q.activations = ActivationQuant::kDynamicToken;
    } else {
        return unsupported(f, "quant_algo", *algo, "ModelOpt checkpoints load with FP8 or FP8_PER_CHANNEL_PER_TOKEN");
    }
    if (const Json* kv = f.find("kv_cache_quant_algo")) {
        if (*kv != "FP8") return unsupported(f, "kv_cache_quant_algo", *kv, "only FP8 KV scales are supported");
        q.kv_cache_fp8 = true;
    }
    for (const char* key : {"exclude_modules", "ignore"}) {
        Result<std::vector<std::string>> names = read_string_list(f, key);
        if (!names.ok()) return names.status();
        q.ignore.insert(q.ignore.end(), names->begin(), names->end());
    }
    return ok_status();
}

bool matches(const std::string& pattern, std::string_view module) {
    const std::string name(module);
    if (pattern.rfind("re:", 0) == 0) {
        try {
            return std::regex_search(name, std::regex(pattern.substr(3)), std::regex_constants::match_continuous);
        } catch (const std::regex_error&) {
            return false;
        }
    }
    if (pattern.find_first_of("*?[") != std::string::npos) return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
    return pattern == name;
}

const char* scale_kind_name(WeightScaleKind k) {
    switch (k) {
        case WeightScaleKind::kTensor: return "per-tensor";
        case WeightScaleKind::kChannel: return "per-channel";
        case WeightScaleKind::kBlock: return "block";
    }
    return "?";
}

const char* activation_name(ActivationQuant a) {
    switch (a) {
        case ActivationQuant::kNone: return "unquantized activations";
        case ActivationQuant::kStaticTensor: return "static per-tensor activations";
        case ActivationQuant::kDynamicToken: return "dynamic per-token activations";
        case ActivationQuant::kDynamicGroup: return "dynamic per-group activations";
    }
    return "?";
}

}  // namespace

Status unsupported(const JsonFields& f, std::string_view key, const Json& value, std::string_view why) {
    return unimplemented(f.file() + ": field '" + f.field_name(key) + "' is " + value.dump() + ": " + std::string(why));
}

bool QuantConfig::quantizes(std::string_view module) const {
    if (!quantized()) return false;
    for (const std::string& pattern : ignore) {
        if (matches(pattern, module)) return false;
    }
    return true;
}

std::string QuantConfig::describe() const {
    if (!quantized()) return "not quantized";
    const char* method_name = method == QuantMethod::kCompressedTensors ? "compressed-tensors"
                              : method == QuantMethod::kHfFp8           ? "fp8"
                              : method == QuantMethod::kGptq            ? "gptq"
                              : method == QuantMethod::kAwq             ? "awq"
                              : method == QuantMethod::kOnLoad          ? "--quantization (on load):"
                                                                        : "modelopt";
    const char* format = weight_dtype == DType::kI8 ? " int8, " : weight_dtype == DType::kQ4 ? " 4-bit, " : " FP8, ";
    std::string s = std::string(method_name) + format;
    if (packing != IntPacking::kNone) {
        s += group_size > 0 ? "a scale per group of " + std::to_string(group_size) + " columns" : std::string("per-channel scales");
        s += symmetric ? ", symmetric" : ", zero points";
        if (act_order) s += ", activation order (g_idx)";
    } else {
        s += std::string(scale_kind_name(weight_scale)) + " weight scales";
        if (weight_scale == WeightScaleKind::kBlock) {
            s += " [" + std::to_string(block_rows) + ", " + std::to_string(block_cols) + "]";
        }
    }
    s += std::string(", ") + activation_name(activations);
    if (kv_cache_fp8) s += ", FP8 KV scales";
    return s;
}

Result<QuantConfig> read_quant_config(const JsonFields& config) {
    QuantConfig q;
    const char* key = config.has("quantization_config") ? "quantization_config" : "compression_config";
    const Json* qc = config.find(key);
    if (qc == nullptr) return q;
    if (!qc->is_object()) return config.error(key, "must be an object");
    JsonFields f(*qc, config.file(), std::string(key) + ".");
    Result<std::string> method = f.get_string_or("quant_method", "compressed-tensors");
    if (!method.ok()) return method.status();
    Status status;
    if (*method == "compressed-tensors") {
        status = read_compressed_tensors(f, q);
    } else if (*method == "fp8") {
        status = read_hf_fp8(f, q);
    } else if (*method == "modelopt") {
        status = read_modelopt(f, q);
    } else if (*method == "gptq") {
        status = read_gptq(f, q);
    } else if (*method == "awq") {
        status = read_awq(f, q);
    } else {
        status = unsupported(f, "quant_method", *method, kSupported);
    }
    if (!status.ok()) return status;
    return q;
}

Result<QuantConfig> read_modelopt_quant_file(const JsonFields& file) {
    const Json* section = file.find("quantization");
    if (section == nullptr || !section->is_object()) return file.error("quantization", "must be an object");
    QuantConfig q;
    HICHAT_RETURN_IF_ERROR(read_modelopt(JsonFields(*section, file.file(), "quantization."), q));
    return q;
}

}  // namespace hichat::model
