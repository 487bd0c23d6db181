#include "model/rope_config.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace hichat::model {
namespace {

constexpr double kDefaultRopeTheta = 10000.0;  // transformers' default_theta

// transformers gives rope_scaling priority over rope_parameters when a file has both
// (RotaryEmbeddingConfigMixin.convert_rope_params_to_dict).
std::string rope_params_key(const JsonFields& top) {
    if (top.has("rope_scaling")) return "rope_scaling";
    if (top.has("rope_parameters")) return "rope_parameters";
    return "";
}

Status read_rope_type(const JsonFields& params, RopeType* type) {
    std::string key = params.has("rope_type") ? "rope_type" : "type";
    Result<std::string> name = params.get_string_or(key, "default");
    if (!name.ok()) return name.status();
    if (*name == "default") {
        *type = RopeType::kDefault;
    } else if (*name == "linear") {
        *type = RopeType::kLinear;
    } else if (*name == "llama3") {
        *type = RopeType::kLlama3;
    } else {
        return unimplemented(params.file() + ": field '" + params.field_name(key) + "' is '" + *name +
                             "': only default, linear and llama3 RoPE are implemented");
    }
    return ok_status();
}

Status read_positive_float(const JsonFields& params, const char* key, float* out) {
    Result<double> v = params.get_number(key);
    if (!v.ok()) return v.status();
    // Checked as the float the kernels use: 1e-50 is positive as a double and 0 as a float.
    const float f = static_cast<float>(*v);
    if (!(f > 0.0f) || !std::isfinite(f)) {
        return params.error(key, "must be a positive float, got " + std::to_string(*v));
    }
    *out = f;
    return ok_status();
}

Status read_llama3_params(const JsonFields& params, int max_position_embeddings, RopeScaling& rope) {
    HICHAT_RETURN_IF_ERROR(read_positive_float(params, "factor", &rope.factor));
    HICHAT_RETURN_IF_ERROR(read_positive_float(params, "low_freq_factor", &rope.low_freq_factor));
    HICHAT_RETURN_IF_ERROR(read_positive_float(params, "high_freq_factor", &rope.high_freq_factor));
    if (!(rope.high_freq_factor > rope.low_freq_factor)) {
        return params.error("high_freq_factor", "must be greater than low_freq_factor");
    }
    // transformers 5 falls back to max_position_embeddings (standardize_rope_params).
    Result<int64_t> orig = params.get_int_or("original_max_position_embeddings", max_position_embeddings);
    if (!orig.ok()) return orig.status();
    if (*orig < 1 || *orig > INT32_MAX) {
        return params.error("original_max_position_embeddings", "must be a positive integer");
    }
    rope.original_max_position_embeddings = static_cast<int>(*orig);
    return ok_status();
}

Status read_partial_rotary(const JsonFields& fields) {
    Result<double> partial = fields.get_number_or("partial_rotary_factor", 1.0);
    if (!partial.ok()) return partial.status();
    if (*partial != 1.0) {
        return unimplemented(fields.file() + ": field '" + fields.field_name("partial_rotary_factor") +
                             "' is " + std::to_string(*partial) + ": partial rotary embeddings are not implemented");
    }
    return ok_status();
}

Status read_theta(const JsonFields& top, const JsonFields* params, float* theta) {
    const JsonFields& source = params != nullptr && params->has("rope_theta") ? *params : top;
    Result<double> v = source.get_number_or("rope_theta", kDefaultRopeTheta);
    if (!v.ok()) return v.status();
    const float f = static_cast<float>(*v);
    if (!(f > 1.0f) || !std::isfinite(f)) {
        return source.error("rope_theta", "must be a finite float greater than 1, got " + std::to_string(*v));
    }
    *theta = f;
    return ok_status();
}

}  // namespace

Status read_rope_config(const JsonFields& top, ModelConfig& cfg) {
    HICHAT_RETURN_IF_ERROR(read_partial_rotary(top));
    std::string key = rope_params_key(top);
    if (key.empty()) return read_theta(top, nullptr, &cfg.rope_theta);

    const Json& obj = *top.find(key);
    if (!obj.is_object()) return top.error(key, "must be a JSON object, got " + obj.dump());
    JsonFields params(obj, top.file(), key + ".");
    HICHAT_RETURN_IF_ERROR(read_theta(top, &params, &cfg.rope_theta));
    HICHAT_RETURN_IF_ERROR(read_partial_rotary(params));
    cfg.rope = RopeScaling{};
    HICHAT_RETURN_IF_ERROR(read_rope_type(params, &cfg.rope.type));
    switch (cfg.rope.type) {
        case RopeType::kDefault: return ok_status();
        case RopeType::kLinear: return read_positive_float(params, "factor", &cfg.rope.factor);
        case RopeType::kLlama3: return read_llama3_params(params, cfg.max_position_embeddings, cfg.rope);
    }
    return ok_status();
}

}  // namespace hichat::model
