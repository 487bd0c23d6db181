#include "fp8_checkpoint_writer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/dtype.h"

namespace hichat::model::testing {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}


// `v` rounded to `dtype` and its bytes appended to `bytes`; returns the rounded value.
float append_as(std::string& bytes, const std::string& dtype, float v) {
    if (dtype == "F32") {
        bytes.append(reinterpret_cast<const char*>(&v), 4);
        return v;
    }
    const uint16_t h = dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v);
    bytes.append(reinterpret_cast<const char*>(&h), 2);
    return dtype == "F16" ? f16_to_f32(h) : bf16_to_f32(h);
}

TensorData scalar(const std::string& name, const std::string& dtype, std::vector<int64_t> shape, float v) {
    TensorData t{name, dtype, std::move(shape), {}};
    append_as(t.bytes, dtype, v);
    return t;
}

struct Grid {
    int64_t block_rows, block_cols;
    std::vector<int64_t> scale_shape;
};

Grid scale_grid(Fp8Layout layout, int64_t n, int64_t k) {
    switch (layout) {
        case Fp8Layout::kCtTensorStatic: return {n, k, {1}};
        case Fp8Layout::kModelOpt: return {n, k, {}};
        case Fp8Layout::kCtChannelDynamic: return {1, k, {n, 1}};
        case Fp8Layout::kCtBlock: return {32, 48, {(n + 31) / 32, (k + 47) / 48}};
        case Fp8Layout::kHfBlock: return {128, 128, {(n + 127) / 128, (k + 127) / 128}};
    }
    return {n, k, {1}};
}

Json fp8_args(const std::string& strategy, bool dynamic) {
    return {{"num_bits", 8}, {"type", "float"}, {"symmetric", true}, {"strategy", strategy}, {"dynamic", dynamic},
            {"group_size", nullptr}, {"block_structure", nullptr}, {"actorder", nullptr}, {"observer", "minmax"}};
}

Json compressed_tensors_config(Fp8Layout layout) {
    Json weights, acts;
    if (layout == Fp8Layout::kCtTensorStatic) {
        weights = fp8_args("tensor", false);
        acts = fp8_args("tensor", false);
    } else if (layout == Fp8Layout::kCtChannelDynamic) {
        weights = fp8_args("channel", false);
        acts = fp8_args("token", true);
        acts["observer"] = nullptr;
    } else {
        weights = fp8_args("block", false);
        weights["block_structure"] = {32, 48};
        acts = fp8_args("group", true);
        acts["group_size"] = 48;
        acts["observer"] = nullptr;
    }
    Json c = {{"quant_method", "compressed-tensors"},
              {"format", "float-quantized"},
              {"quantization_status", "compressed"},
              {"global_compression_ratio", nullptr},
              {"config_groups",
               {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", acts},
                             {"output_activations", nullptr}, {"format", "float-quantized"}}}}},
              {"ignore", {"lm_head"}},
              {"kv_cache_scheme", nullptr},
              {"sparsity_config", Json::object()}};
    if (layout == Fp8Layout::kCtTensorStatic) c["kv_cache_scheme"] = fp8_args("tensor", false);
    return c;
}

// Per-layer KV scales as the layout's producer names them.
void add_kv_scales(Fp8Layout layout, int num_layers, TinyModel& fp8) {
    if (layout != Fp8Layout::kCtTensorStatic && layout != Fp8Layout::kModelOpt) return;
    for (int l = 0; l < num_layers; ++l) {
        const std::string attn = "model.layers." + std::to_string(l) + ".self_attn.";
        const float k = 0.0625f * static_cast<float>(l + 1), v = 0.03125f * static_cast<float>(l + 3);
        if (layout == Fp8Layout::kModelOpt) {
            fp8.tensors.push_back(scalar(attn + "k_proj.k_scale", "F32", {}, k));
            fp8.tensors.push_back(scalar(attn + "v_proj.v_scale", "F32", {}, v));
        } else {
            fp8.tensors.push_back(scalar(attn + "k_scale", "F32", {1}, k));
            fp8.tensors.push_back(scalar(attn + "v_scale", "F32", {1}, v));
        }
    }
}

}  // namespace

std::vector<Fp8Layout> all_fp8_layouts() {
    return {Fp8Layout::kCtTensorStatic, Fp8Layout::kCtChannelDynamic, Fp8Layout::kCtBlock, Fp8Layout::kHfBlock,
            Fp8Layout::kModelOpt};
}

std::string fp8_layout_name(Fp8Layout layout) {
    switch (layout) {
        case Fp8Layout::kCtTensorStatic: return "ct_tensor_static";
        case Fp8Layout::kCtChannelDynamic: return "ct_channel_dynamic";
        case Fp8Layout::kCtBlock: return "ct_block";
        case Fp8Layout::kHfBlock: return "hf_block";
        case Fp8Layout::kModelOpt: return "modelopt";
    }
    return "?";
}

void Fp8Checkpoint::write_fp8(const std::string& dir) const {
    fp8.write(dir);
    if (hf_quant_config) write_file(dir + "/hf_quant_config.json", hf_quant_config->dump(2));
}

Fp8Checkpoint quantize_fp8(const TinyModel& model, Fp8Layout layout, const std::string& scale_dtype) {
    Fp8Checkpoint out;
    out.fp8.config = model.config;
    out.dequantized.config = model.config;
    const bool hf = layout == Fp8Layout::kHfBlock, modelopt = layout == Fp8Layout::kModelOpt;
    const bool static_input = layout == Fp8Layout::kCtTensorStatic || modelopt;
    const std::string scale_suffix = hf ? ".weight_scale_inv" : ".weight_scale";
    for (const TensorData& t : model.tensors) {
        if (!ends_with(t.name, "_proj.weight")) {
            out.fp8.tensors.push_back(t);
            out.dequantized.tensors.push_back(t);
            continue;
        }
        const int64_t n = t.shape.at(0), k = t.shape.at(1);
        const Grid g = scale_grid(layout, n, k);
        const int64_t grid_rows = (n + g.block_rows - 1) / g.block_rows, grid_cols = (k + g.block_cols - 1) / g.block_cols;
        const std::string module = t.name.substr(0, t.name.size() - std::string(".weight").size());
        TensorData scales{module + scale_suffix, scale_dtype, g.scale_shape, {}};
        std::vector<float> stored(static_cast<size_t>(grid_rows * grid_cols));
        for (int64_t br = 0; br < grid_rows; ++br) {
            for (int64_t bc = 0; bc < grid_cols; ++bc) {
                float amax = 0.0f;
                for (int64_t r = br * g.block_rows; r < std::min(n, (br + 1) * g.block_rows); ++r) {
                    for (int64_t c = bc * g.block_cols; c < std::min(k, (bc + 1) * g.block_cols); ++c) {
                        amax = std::max(amax, std::fabs(tensor_value(t, static_cast<size_t>(r * k + c))));
                    }
                }
                const float s = amax > 0.0f ? amax / kFp8E4M3Max : 1.0f;
                stored[static_cast<size_t>(br * grid_cols + bc)] = append_as(scales.bytes, scale_dtype, s);
            }
        }
        TensorData q{t.name, "F8_E4M3", t.shape, std::string(static_cast<size_t>(n * k), '\0')};
        TensorData d{t.name, "BF16", t.shape, {}};
        for (int64_t r = 0; r < n; ++r) {
            for (int64_t c = 0; c < k; ++c) {
                const float s = stored[static_cast<size_t>((r / g.block_rows) * grid_cols + c / g.block_cols)];
                const uint8_t code = f32_to_fp8_e4m3(tensor_value(t, static_cast<size_t>(r * k + c)) / s);
                q.bytes[static_cast<size_t>(r * k + c)] = static_cast<char>(code);
                append_as(d.bytes, "BF16", fp8_e4m3_to_f32(code) * s);
            }
        }
        out.fp8.tensors.push_back(std::move(q));
        out.fp8.tensors.push_back(std::move(scales));
        if (static_input) out.fp8.tensors.push_back(scalar(module + ".input_scale", scale_dtype, g.scale_shape, 0.02f));
        out.dequantized.tensors.push_back(std::move(d));
    }
    add_kv_scales(layout, out.fp8.config.value("num_hidden_layers", 0), out.fp8);
    if (modelopt) {
        out.hf_quant_config = Json{{"producer", {{"name", "modelopt"}, {"version", "0.19.0"}}},
                                   {"quantization", {{"quant_algo", "FP8"}, {"kv_cache_quant_algo", "FP8"},
                                                     {"exclude_modules", {"lm_head"}}}}};
    } else if (hf) {
        out.fp8.config["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"},
                                                 {"weight_block_size", {128, 128}},
                                                 {"modules_to_not_convert", {"lm_head"}}};
    } else {
        out.fp8.config["quantization_config"] = compressed_tensors_config(layout);
    }
    return out;
}

TinyModel read_checkpoint(const std::string& dir) {
    TinyModel m;
    std::ifstream config(dir + "/config.json");
    if (!config) throw std::runtime_error("cannot read " + dir + "/config.json");
    m.config = Json::parse(config);
    std::ifstream in(dir + "/model.safetensors", std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string image = buffer.str();
    uint64_t len = 0;
    for (int i = 0; i < 8; ++i) len |= static_cast<uint64_t>(static_cast<unsigned char>(image.at(i))) << (8 * i);
    const Json header = Json::parse(image.substr(8, len));
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") continue;
        const auto begin = entry["data_offsets"][0].get<size_t>(), end = entry["data_offsets"][1].get<size_t>();
        m.tensors.push_back(TensorData{name, entry["dtype"].get<std::string>(),
                                       entry["shape"].get<std::vector<int64_t>>(), image.substr(8 + len + begin, end - begin)});
    }
    return m;
}

}  // namespace hichat::model::testing
