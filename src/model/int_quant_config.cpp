// The integer checkpoint formats' quantization_config: GPTQ, AWQ and compressed-tensors int weights.
// Each becomes 4-bit codes (kQ4) or int8 codes (kI8) with the packing its files use; the loader
// repacks them into the kernels' layouts (model/int_weights.h). What the kernels cannot run is refused
// naming the field: other bit widths, groups that are not whole multiples of 32 columns, other kernel
// layouts (AWQ gemv, exllama, marlin), static or asymmetric int8 activations.
#include "model/quant_config_reader.h"

namespace hichat::model {
namespace {

constexpr const char* kIntSupported =
    "HiChat reads 4-bit GPTQ and AWQ (gemm) checkpoints, and compressed-tensors pack-quantized (4 or 8 bits) "
    "and int-quantized (int8 per channel)";

// A 4-bit group size: -1 (or absent for compressed-tensors' channel strategy) is one group per row;
// else a positive multiple of 32, the kernels' group (base/q4_layout.h).
Status read_group_size(const JsonFields& f, std::string_view key, QuantConfig& q) {
    Result<int64_t> group = f.get_int(key);
    if (!group.ok()) return group.status();
    if (*group == -1) {
        q.group_size = 0;
        return ok_status();
    }
    if (*group <= 0 || *group % 32 != 0 || *group > (int64_t{1} << 20)) {
        return unsupported(f, key, *group, "the 4-bit kernels take groups of a multiple of 32 columns, or -1 (per row)");
    }
    q.group_size = static_cast<int>(*group);
    return ok_status();
}

Status read_bits(const JsonFields& f, std::string_view key, std::initializer_list<int> allowed, QuantConfig& q) {
    Result<int64_t> bits = f.get_int(key);
    if (!bits.ok()) return bits.status();
    for (int b : allowed) {
        if (*bits == b) {
            q.bits = b;
            q.weight_dtype = b == 4 ? DType::kQ4 : DType::kI8;
            return ok_status();
        }
    }
    return unsupported(f, key, *bits, kIntSupported);
}

Status read_names(const JsonFields& f, std::string_view key, QuantConfig& q) {
    const Json* list = f.find(key);
    if (list == nullptr) return ok_status();
    if (!list->is_array()) return f.error(key, "must be a list of module names, got " + list->dump());
    for (const Json& item : *list) {
        if (!item.is_string()) return f.error(key, "must be a list of module names, got " + list->dump());
        // AWQ and GPTQ name module suffixes ("lm_head", "mlp.gate"): matched anywhere in the name.
        q.ignore.push_back("re:(.*\\.)?" + item.get<std::string>() + "$");
    }
    return ok_status();
}

}  // namespace

Status read_gptq(const JsonFields& f, QuantConfig& q) {
    q.method = QuantMethod::kGptq;
    q.packing = IntPacking::kGptq;
    HICHAT_RETURN_IF_ERROR(read_bits(f, "bits", {4}, q));
    HICHAT_RETURN_IF_ERROR(read_group_size(f, "group_size", q));
    Result<bool> desc_act = f.get_bool_or("desc_act", false);
    if (!desc_act.ok()) return desc_act.status();
    q.act_order = *desc_act;
    Result<bool> sym = f.get_bool_or("sym", true);
    if (!sym.ok()) return sym.status();
    q.symmetric = *sym;
    // transformers/optimum write checkpoint_format; GPTQModel writes format (and pack_dtype).
    const char* format_key = f.has("checkpoint_format") ? "checkpoint_format" : "format";
    Result<std::string> format = f.get_string_or(format_key, "gptq");
    if (!format.ok()) return format.status();
    if (*format != "gptq" && *format != "gptq_v2") {
        return unsupported(f, format_key, *format, "only the gptq (v1) and gptq_v2 layouts load; " + std::string(kIntSupported));
    }
    q.zeros_minus_one = *format == "gptq";
    Result<std::string> pack = f.get_string_or("pack_dtype", "int32");
    if (!pack.ok()) return pack.status();
    if (*pack != "int32") return unsupported(f, "pack_dtype", *pack, "GPTQ codes load packed in int32");
    if (const Json* v = f.find("use_exllama"); v != nullptr && !v->is_boolean()) {
        return f.error("use_exllama", "must be true or false");
    }
    HICHAT_RETURN_IF_ERROR(read_names(f, "modules_to_not_convert", q));
    q.weight_scale = WeightScaleKind::kBlock;
    q.activations = ActivationQuant::kNone;
    q.scale_name = "scales";
    return ok_status();
}

Status read_awq(const JsonFields& f, QuantConfig& q) {
    q.method = QuantMethod::kAwq;
    q.packing = IntPacking::kAwq;
    HICHAT_RETURN_IF_ERROR(read_bits(f, f.has("bits") ? "bits" : "w_bit", {4}, q));
    HICHAT_RETURN_IF_ERROR(read_group_size(f, f.has("group_size") ? "group_size" : "q_group_size", q));
    Result<bool> zero_point = f.get_bool_or("zero_point", true);
    if (!zero_point.ok()) return zero_point.status();
    q.symmetric = !*zero_point;
    Result<std::string> version = f.get_string_or("version", "gemm");
    if (!version.ok()) return version.status();
    if (*version != "gemm" && *version != "GEMM") {
        return unsupported(f, "version", *version, "only AWQ's gemm layout loads (gemv, gemv_fast, marlin and exllama "
                                                   "checkpoints pack their codes differently)");
    }
    HICHAT_RETURN_IF_ERROR(read_names(f, "modules_to_not_convert", q));
    q.weight_scale = WeightScaleKind::kBlock;
    q.activations = ActivationQuant::kNone;
    q.scale_name = "scales";
    return ok_status();
}

// compressed-tensors int weights (the group's `weights` args) and their `input_activations`
// (null: W4A16 / W8A16; dynamic symmetric per-token int8: W8A8), in the group's `format`.
Status read_ct_int(const JsonFields& w, const JsonFields* acts, const std::string& format, QuantConfig& q) {
    q.weight_scale = WeightScaleKind::kBlock;
    if (format == "pack-quantized") {
        q.packing = IntPacking::kCtPacked;
        HICHAT_RETURN_IF_ERROR(read_bits(w, "num_bits", {4, 8}, q));
    } else if (format == "int-quantized" || format == "naive-quantized") {
        q.packing = IntPacking::kCtInt8;
        HICHAT_RETURN_IF_ERROR(read_bits(w, "num_bits", {8}, q));
    } else {
        return unsupported(w, "type", "int", "int weights load from the pack-quantized or int-quantized format, not '" +
                                                 format + "'; " + kIntSupported);
    }
    Result<bool> sym = w.get_bool_or("symmetric", true);
    if (!sym.ok()) return sym.status();
    q.symmetric = *sym;
    if (!q.symmetric && q.bits == 8) {
        return unsupported(w, "symmetric", false, "int8 weights load symmetric only (no zero points)");
    }
    if (const Json* dyn = w.find("dynamic"); dyn != nullptr && *dyn != false) {
        return unsupported(w, "dynamic", *dyn, "weight scales must be stored in the checkpoint");
    }
    Result<std::string> strategy = w.get_string("strategy");
    if (!strategy.ok()) return strategy.status();
    if (*strategy == "channel") {
        q.group_size = 0;
    } else if (*strategy == "group" && q.bits == 4) {
        HICHAT_RETURN_IF_ERROR(read_group_size(w, "group_size", q));
    } else {
        return unsupported(w, "strategy", *strategy,
                           q.bits == 4 ? "4-bit weights take channel or group scales" : "int8 weights take channel scales");
    }
    if (const Json* order = w.find("actorder"); order != nullptr && *order != false) {
        if (*order == "weight") {
            // Quantized in activation order, stored in column order with contiguous groups: no g_idx.
        } else if ((*order == "group" || *order == true) && *strategy == "group") {
            q.act_order = true;
        } else {
            return unsupported(w, "actorder", *order, "activation ordering takes null, \"weight\", or \"group\" with group scales");
        }
    }
    q.activations = ActivationQuant::kNone;
    if (acts == nullptr) return ok_status();
    if (q.bits != 8) return acts->error("type", "is set, but 4-bit weights take unquantized activations (W4A16)");
    const bool int8_token = acts->find("num_bits") != nullptr && *acts->find("num_bits") == 8 &&
                            acts->find("type") != nullptr && *acts->find("type") == "int";
    if (!int8_token) return unsupported(*acts, "type", acts->find("type") ? *acts->find("type") : Json(), "W8A8 takes int8 activations");
    Result<bool> act_sym = acts->get_bool_or("symmetric", true);
    if (!act_sym.ok()) return act_sym.status();
    if (!*act_sym) return unsupported(*acts, "symmetric", false, "int8 activations are quantized symmetric per token");
    Result<std::string> act_strategy = acts->get_string("strategy");
    if (!act_strategy.ok()) return act_strategy.status();
    const Json* act_dynamic = acts->find("dynamic");
    if (*act_strategy != "token" || act_dynamic == nullptr || *act_dynamic != true) {
        return unsupported(*acts, "strategy", *act_strategy,
                           "int8 activations load as dynamic per-token scales (the CPU's int8 kernels quantize each "
                           "token); static scales are not supported");
    }
    q.activations = ActivationQuant::kDynamicToken;
    return ok_status();
}

}  // namespace hichat::model
