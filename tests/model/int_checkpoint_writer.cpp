#include "int_checkpoint_writer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

#include "base/dtype.h"

namespace hichat::model::testing {
namespace {

constexpr int kNibblesPerWord = 8;  // 4-bit values in one int32 word, value j at bits [4j, 4j + 4)

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

size_t at(int64_t i) { return static_cast<size_t>(i); }

// ---------------------------------------------------------------------------------------------
// What each layout is.

enum class Family { kGptq, kAwq, kCtPacked, kCtInt8 };

Family family_of(IntLayout layout) {
    switch (layout) {
        case IntLayout::kGptq:
        case IntLayout::kGptqAsym:
        case IntLayout::kGptqActOrder:
        case IntLayout::kGptqV2: return Family::kGptq;
        case IntLayout::kAwq: return Family::kAwq;
        case IntLayout::kCtW4A16:
        case IntLayout::kCtW4A16Asym:
        case IntLayout::kCtW4A16ActOrder: return Family::kCtPacked;
        case IntLayout::kCtW8A8:
        case IntLayout::kCtW8A16: return Family::kCtInt8;
    }
    throw std::invalid_argument("int_checkpoint_writer: unknown layout");
}

// checkpoint_format "gptq": qzeros hold zero - 1 (in 4 bits) and readers add the 1 back.
bool is_gptq_v1(IntLayout layout) { return family_of(layout) == Family::kGptq && layout != IntLayout::kGptqV2; }

// The effective zero points a 4-bit layout can express: GPTQ v1 stores zero - 1 in a nibble, so 1..16;
// the others store the zero itself (compressed-tensors: zp + 8 for zp in -8..7), so 0..15.
struct ZeroRange {
    int lo, hi;
};

ZeroRange zero_range(IntLayout layout) { return is_gptq_v1(layout) ? ZeroRange{1, 16} : ZeroRange{0, 15}; }

// GPTQ and AWQ store f16 scales; compressed-tensors stores them in the model's own dtype.
std::string scale_dtype_of(IntLayout layout, const std::string& weight_dtype) {
    const Family f = family_of(layout);
    return f == Family::kGptq || f == Family::kAwq ? "F16" : weight_dtype;
}

// ---------------------------------------------------------------------------------------------
// Tensor bytes.


std::vector<float> values_of(const TensorData& t) {
    std::vector<float> v(at(t.shape.at(0) * t.shape.at(1)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = tensor_value(t, i);
    return v;
}

// `v` rounded to nearest in `dtype` (F32, F16 or BF16).
float round_to(const std::string& dtype, float v) {
    if (dtype == "F32") return v;
    if (dtype == "F16") return f16_to_f32(f32_to_f16(v));
    if (dtype == "BF16") return bf16_to_f32(f32_to_bf16(v));
    throw std::invalid_argument("int_checkpoint_writer: no scale dtype " + dtype);
}

template <typename T>
void append_raw(std::string& bytes, T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

TensorData float_tensor(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
                        const std::vector<float>& values) {
    TensorData t{name, dtype, std::move(shape), {}};
    for (float v : values) {
        if (dtype == "F32") append_raw(t.bytes, v);
        else append_raw(t.bytes, dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v));
    }
    return t;
}

TensorData i32_tensor(const std::string& name, std::vector<int64_t> shape, const std::vector<int32_t>& values) {
    TensorData t{name, "I32", std::move(shape), {}};
    for (int32_t v : values) append_raw(t.bytes, v);
    return t;
}

TensorData i8_tensor(const std::string& name, std::vector<int64_t> shape, const std::vector<int32_t>& values) {
    TensorData t{name, "I8", std::move(shape), {}};
    for (int32_t v : values) append_raw(t.bytes, static_cast<int8_t>(v));
    return t;
}

// Eight 4-bit values in one int32 word: nibble_of(j) at bits [4j, 4j + 4).
template <typename NibbleOf>
int32_t pack_word(NibbleOf nibble_of) {
    uint32_t word = 0;
    for (int j = 0; j < kNibblesPerWord; ++j) word |= (static_cast<uint32_t>(nibble_of(j)) & 0xfu) << (4 * j);
    return static_cast<int32_t>(word);
}

// ---------------------------------------------------------------------------------------------
// Column groups. Without act-order column c is in group c / g. With it (GPTQ desc_act, compressed-
// tensors actorder "group") GPTQ visits the columns in an order `perm` (by its Hessian's diagonal) and
// cuts groups along that order: column perm[i] is in group i / g, while the weights stay stored in
// their own column order. Here perm is pseudo-random, seeded by the module's input, since modules
// fed the same input (q/k/v, gate/up) share GPTQ's Hessian and so its order.

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
    return h;
}

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The name of the activation `module` reads: one per attention block for q/k/v, one per MLP for gate/up.
std::string input_of(const std::string& module) {
    const size_t dot = module.rfind('.');
    const std::string parent = module.substr(0, dot + 1), leaf = module.substr(dot + 1);
    if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj") return parent + "qkv.input";
    if (leaf == "gate_proj" || leaf == "up_proj") return parent + "gate_up.input";
    return module + ".input";
}

std::vector<int32_t> column_permutation(const std::string& input, int64_t k) {
    std::vector<int32_t> perm(at(k));
    for (int64_t i = 0; i < k; ++i) perm[at(i)] = static_cast<int32_t>(i);
    uint64_t state = fnv1a(input + "/" + std::to_string(k));
    for (int64_t i = k - 1; i > 0; --i) {  // Fisher-Yates
        const auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
        std::swap(perm[at(i)], perm[at(j)]);
    }
    return perm;
}

std::vector<int32_t> group_of_columns(const std::string& module, int64_t k, int64_t g, bool act_order) {
    std::vector<int32_t> group(at(k));
    if (!act_order) {
        for (int64_t c = 0; c < k; ++c) group[at(c)] = static_cast<int32_t>(c / g);
        return group;
    }
    const std::vector<int32_t> perm = column_permutation(input_of(module), k);
    for (int64_t i = 0; i < k; ++i) group[at(perm[at(i)])] = static_cast<int32_t>(i / g);
    return group;
}

// ---------------------------------------------------------------------------------------------
// Round-to-nearest quantization. The scale is rounded to its stored dtype first and the codes are
// computed with that stored scale, so (q - zero) * scale is exactly what a reader reconstructs.

struct Quantizer {
    int bits = 4;
    bool symmetric = true;
    ZeroRange zeros{0, 15};  // asymmetric 4-bit only
    std::string scale_dtype;
};

struct GroupParams {
    float scale = 1.0f;
    int zero = 0;
};

int q_min(const Quantizer& qz) { return qz.bits == 8 ? -127 : 0; }
int q_max(const Quantizer& qz) { return qz.bits == 8 ? 127 : 15; }

// A stored scale; 1 where the group's weights are all zero (every code is then the zero point).
float stored_scale(const Quantizer& qz, double scale) {
    const float s = round_to(qz.scale_dtype, static_cast<float>(scale));
    return s > 0.0f && std::isfinite(s) ? s : 1.0f;
}

// Symmetric: scale max|w| / 7 with zero 8 (4-bit), max|w| / 127 with zero 0 (int8).
// Asymmetric 4-bit: scale (max - min) / 15 with zero round(-min / scale), kept to the layout's range,
// or `pinned_zero` where given.
GroupParams group_params(const Quantizer& qz, float lo, float hi, std::optional<int> pinned_zero) {
    GroupParams p;
    if (qz.symmetric) {
        const double amax = std::max(std::fabs(static_cast<double>(lo)), std::fabs(static_cast<double>(hi)));
        p.scale = stored_scale(qz, amax / (qz.bits == 8 ? 127.0 : 7.0));
        p.zero = qz.bits == 8 ? 0 : 8;
        return p;
    }
    p.scale = stored_scale(qz, (static_cast<double>(hi) - lo) / 15.0);
    const double natural = std::nearbyint(-static_cast<double>(lo) / p.scale);
    p.zero = pinned_zero ? *pinned_zero
                         : static_cast<int>(std::clamp<double>(natural, qz.zeros.lo, qz.zeros.hi));
    return p;
}

// Asymmetric layouts pin two groups of every linear to the ends of the zero range (GPTQ v1: effective
// zeros 1 and 16, the stored nibbles 0 and 15), at different nibble positions of the packed zeros, so
// that readers meet both extreme nibbles; the weights of those groups are then clamped where they fall
// outside the range the zero leaves.
std::optional<int> pinned_zero(const Quantizer& qz, int64_t r, int64_t group, int64_t n, int64_t groups) {
    if (qz.symmetric) return std::nullopt;
    if (r == 3 % n && group == 0) return qz.zeros.lo;
    if (r == n - 2 && group == groups - 1) return qz.zeros.hi;
    return std::nullopt;
}

int quantize_value(const Quantizer& qz, float w, const GroupParams& p) {
    const double v = std::nearbyint(static_cast<double>(w) / p.scale) + p.zero;
    return static_cast<int>(std::clamp<double>(v, q_min(qz), q_max(qz)));
}

// The code, zero and scale of element [r, c] / group [r, g] of a linear.
int32_t code(const IntLinear& l, int64_t r, int64_t c) { return l.q[at(r * l.k + c)]; }
int32_t zero_of(const IntLinear& l, int64_t r, int64_t g) { return l.zero[at(r * l.groups + g)]; }
float scale_of(const IntLinear& l, int64_t r, int64_t g) { return l.scale[at(r * l.groups + g)]; }

IntLinear quantize_linear(const TensorData& weight, const Quantizer& qz, std::vector<int32_t> group_of_col,
                          int64_t groups) {
    IntLinear l;
    l.module = weight.name.substr(0, weight.name.size() - std::string(".weight").size());
    l.n = weight.shape.at(0);
    l.k = weight.shape.at(1);
    l.bits = qz.bits;
    l.groups = groups;
    l.group_of_col = std::move(group_of_col);
    l.q.resize(at(l.n * l.k));
    l.zero.resize(at(l.n * groups));
    l.scale.resize(at(l.n * groups));
    const std::vector<float> w = values_of(weight);
    std::vector<float> lo(at(groups)), hi(at(groups));
    std::vector<GroupParams> params(at(groups));
    for (int64_t r = 0; r < l.n; ++r) {
        const float* row = w.data() + r * l.k;
        std::fill(lo.begin(), lo.end(), std::numeric_limits<float>::infinity());
        std::fill(hi.begin(), hi.end(), -std::numeric_limits<float>::infinity());
        for (int64_t c = 0; c < l.k; ++c) {
            const size_t g = at(l.group_of_col[at(c)]);
            lo[g] = std::min(lo[g], row[c]);
            hi[g] = std::max(hi[g], row[c]);
        }
        for (int64_t g = 0; g < groups; ++g) {
            params[at(g)] = group_params(qz, lo[at(g)], hi[at(g)], pinned_zero(qz, r, g, l.n, groups));
            l.scale[at(r * groups + g)] = params[at(g)].scale;
            l.zero[at(r * groups + g)] = params[at(g)].zero;
        }
        for (int64_t c = 0; c < l.k; ++c) {
            l.q[at(r * l.k + c)] = quantize_value(qz, row[c], params[at(l.group_of_col[at(c)])]);
        }
    }
    return l;
}

// w[r, c] = (q - zero) * scale, in double, rounded once to f32.
std::vector<float> dequantize(const IntLinear& l) {
    std::vector<float> w(at(l.n * l.k));
    for (int64_t r = 0; r < l.n; ++r) {
        for (int64_t c = 0; c < l.k; ++c) {
            const int64_t g = l.group_of_col[at(c)];
            const double steps = static_cast<double>(code(l, r, c)) - zero_of(l, r, g);
            w[at(r * l.k + c)] = static_cast<float>(steps * static_cast<double>(scale_of(l, r, g)));
        }
    }
    return w;
}

// The scales as GPTQ and AWQ store them: [groups, n], group-major.
std::vector<float> group_major_scales(const IntLinear& l) {
    std::vector<float> out(l.scale.size());
    for (int64_t g = 0; g < l.groups; ++g) {
        for (int64_t r = 0; r < l.n; ++r) out[at(g * l.n + r)] = scale_of(l, r, g);
    }
    return out;
}

void require_multiple_of_8(const IntLinear& l, bool k_too, const char* format) {
    if (l.n % kNibblesPerWord == 0 && (!k_too || l.k % kNibblesPerWord == 0)) return;
    throw std::invalid_argument(std::string("int_checkpoint_writer: ") + format + " packs 8 per word; " +
                                l.module + " is [" + std::to_string(l.n) + ", " + std::to_string(l.k) + "]");
}

// ---------------------------------------------------------------------------------------------
// GPTQ (AutoGPTQ / optimum; transformers quant_method "gptq"), per module:
//   qweight I32 [K/8, N]      word i of column n holds input rows 8i+j of that column at nibble j
//   qzeros  I32 [G, N/8]      word c of group row g holds the zeros of columns 8c+j at nibble j;
//                             v1 ("gptq") stores zero - 1 in 4 bits, v2 ("gptq_v2") the zero itself
//   scales  F16 [G, N]
//   g_idx   I32 [K]           the group of each input column
std::vector<TensorData> gptq_tensors(const IntLinear& l, bool v1) {
    require_multiple_of_8(l, true, "GPTQ");
    const int64_t words_k = l.k / kNibblesPerWord, words_n = l.n / kNibblesPerWord;
    std::vector<int32_t> qweight(at(words_k * l.n));
    for (int64_t i = 0; i < words_k; ++i) {
        for (int64_t col = 0; col < l.n; ++col) {
            qweight[at(i * l.n + col)] =
                pack_word([&](int j) { return code(l, col, kNibblesPerWord * i + j); });
        }
    }
    const int32_t stored_minus = v1 ? 1 : 0;
    std::vector<int32_t> qzeros(at(l.groups * words_n));
    for (int64_t g = 0; g < l.groups; ++g) {
        for (int64_t c = 0; c < words_n; ++c) {
            qzeros[at(g * words_n + c)] =
                pack_word([&](int j) { return zero_of(l, kNibblesPerWord * c + j, g) - stored_minus; });
        }
    }
    return {i32_tensor(l.module + ".qweight", {words_k, l.n}, qweight),
            i32_tensor(l.module + ".qzeros", {l.groups, words_n}, qzeros),
            float_tensor(l.module + ".scales", "F16", {l.groups, l.n}, group_major_scales(l)),
            i32_tensor(l.module + ".g_idx", {l.k}, l.group_of_col)};
}

// AutoAWQ GEMM, per module:
//   qweight I32 [K, N/8]      word c of input row k holds columns 8c + kAwqOrder[j] at nibble j
//   qzeros  I32 [G, N/8]      the same interleave over the zeros of group row g, stored as they are
//   scales  F16 [G, N]
constexpr std::array<int, kNibblesPerWord> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};

std::vector<TensorData> awq_tensors(const IntLinear& l) {
    require_multiple_of_8(l, false, "AWQ");
    const int64_t words_n = l.n / kNibblesPerWord;
    const auto column = [](int64_t c, int j) { return kNibblesPerWord * c + kAwqOrder[at(j)]; };
    std::vector<int32_t> qweight(at(l.k * words_n));
    for (int64_t row = 0; row < l.k; ++row) {
        for (int64_t c = 0; c < words_n; ++c) {
            qweight[at(row * words_n + c)] = pack_word([&](int j) { return code(l, column(c, j), row); });
        }
    }
    std::vector<int32_t> qzeros(at(l.groups * words_n));
    for (int64_t g = 0; g < l.groups; ++g) {
        for (int64_t c = 0; c < words_n; ++c) {
            qzeros[at(g * words_n + c)] = pack_word([&](int j) { return zero_of(l, column(c, j), g); });
        }
    }
    return {i32_tensor(l.module + ".qweight", {l.k, words_n}, qweight),
            i32_tensor(l.module + ".qzeros", {l.groups, words_n}, qzeros),
            float_tensor(l.module + ".scales", "F16", {l.groups, l.n}, group_major_scales(l))};
}

// compressed-tensors pack-quantized (4-bit), per module:
//   weight_packed     I32 [N, ceil(K/8)]   word i of row n holds value + 8 of columns 8i+j at nibble j,
//                                          nibbles past K zero
//   weight_scale      dtype [N, G]
//   weight_shape      I32 [2]              {N, K}
//   weight_zero_point I32 [ceil(N/8), G]   asymmetric only: zp + 8 of rows 8r+j at nibble j of word r,
//                                          nibbles past N zero
//   weight_g_idx      I32 [K]              actorder "group" only
// The IntLinear's q and zero already are value + 8 and zp + 8.
std::vector<TensorData> ct_packed_tensors(const IntLinear& l, const std::string& scale_dtype, bool symmetric,
                                          bool act_order) {
    const int64_t words_k = ceil_div(l.k, kNibblesPerWord), words_n = ceil_div(l.n, kNibblesPerWord);
    std::vector<int32_t> packed(at(l.n * words_k));
    for (int64_t r = 0; r < l.n; ++r) {
        for (int64_t i = 0; i < words_k; ++i) {
            packed[at(r * words_k + i)] = pack_word([&](int j) {
                const int64_t c = kNibblesPerWord * i + j;
                return c < l.k ? code(l, r, c) : 0;
            });
        }
    }
    std::vector<TensorData> out = {
        i32_tensor(l.module + ".weight_packed", {l.n, words_k}, packed),
        float_tensor(l.module + ".weight_scale", scale_dtype, {l.n, l.groups}, l.scale),
        i32_tensor(l.module + ".weight_shape", {2}, {static_cast<int32_t>(l.n), static_cast<int32_t>(l.k)})};
    if (!symmetric) {
        std::vector<int32_t> zero_point(at(words_n * l.groups));
        for (int64_t w = 0; w < words_n; ++w) {
            for (int64_t g = 0; g < l.groups; ++g) {
                zero_point[at(w * l.groups + g)] = pack_word([&](int j) {
                    const int64_t r = kNibblesPerWord * w + j;
                    return r < l.n ? zero_of(l, r, g) : 0;
                });
            }
        }
        out.push_back(i32_tensor(l.module + ".weight_zero_point", {words_n, l.groups}, zero_point));
    }
    if (act_order) out.push_back(i32_tensor(l.module + ".weight_g_idx", {l.k}, l.group_of_col));
    return out;
}

// compressed-tensors int-quantized (8-bit), per module: weight I8 [N, K], weight_scale dtype [N, 1].
std::vector<TensorData> ct_int8_tensors(const IntLinear& l, const std::string& scale_dtype) {
    return {i8_tensor(l.module + ".weight", {l.n, l.k}, l.q),
            float_tensor(l.module + ".weight_scale", scale_dtype, {l.n, 1}, l.scale)};
}

std::vector<TensorData> packed_tensors(IntLayout layout, const IntLinear& l, const std::string& scale_dtype) {
    switch (family_of(layout)) {
        case Family::kGptq: return gptq_tensors(l, is_gptq_v1(layout));
        case Family::kAwq: return awq_tensors(l);
        case Family::kCtPacked:
            return ct_packed_tensors(l, scale_dtype, int_layout_symmetric(layout), int_layout_act_order(layout));
        case Family::kCtInt8: return ct_int8_tensors(l, scale_dtype);
    }
    return {};
}

// ---------------------------------------------------------------------------------------------
// quantization_config of config.json.

Json gptq_config(IntLayout layout, int group_size) {
    return {{"quant_method", "gptq"},
            {"bits", 4},
            {"group_size", group_size},
            {"desc_act", int_layout_act_order(layout)},
            {"sym", int_layout_symmetric(layout)},
            {"checkpoint_format", is_gptq_v1(layout) ? "gptq" : "gptq_v2"},
            {"damp_percent", 0.01},
            {"true_sequential", true},
            {"static_groups", false}};
}

Json awq_config(int group_size) {
    return {{"quant_method", "awq"}, {"bits", 4},          {"group_size", group_size},
            {"zero_point", true},    {"version", "gemm"}, {"modules_to_not_convert", nullptr}};
}

// One QuantizationArgs of compressed-tensors.
Json ct_args(int bits, bool symmetric, const std::string& strategy, bool dynamic, Json group_size,
             Json actorder, Json observer) {
    return {{"num_bits", bits},        {"type", "int"},       {"symmetric", symmetric},
            {"strategy", strategy},    {"dynamic", dynamic},  {"group_size", std::move(group_size)},
            {"block_structure", nullptr}, {"actorder", std::move(actorder)}, {"observer", std::move(observer)}};
}

Json ct_config(IntLayout layout, int group_size) {
    const bool packed = family_of(layout) == Family::kCtPacked;
    const std::string format = packed ? "pack-quantized" : "int-quantized";
    Json weights = packed ? ct_args(4, int_layout_symmetric(layout), "group", false, group_size,
                                    int_layout_act_order(layout) ? Json("group") : Json(nullptr), "minmax")
                          : ct_args(8, true, "channel", false, nullptr, nullptr, "minmax");
    // W8A8: int8 activations quantized per token at run time; W4A16 / W8A16: activations unquantized.
    Json acts = layout == IntLayout::kCtW8A8 ? ct_args(8, true, "token", true, nullptr, nullptr, nullptr)
                                             : Json(nullptr);
    return {{"quant_method", "compressed-tensors"},
            {"format", format},
            {"quantization_status", "compressed"},
            {"global_compression_ratio", nullptr},
            {"config_groups",
             {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", acts},
                           {"output_activations", nullptr}, {"format", format}}}}},
            {"ignore", {"lm_head"}},
            {"kv_cache_scheme", nullptr},
            {"sparsity_config", Json::object()}};
}

Json quantization_config(IntLayout layout, int group_size) {
    switch (family_of(layout)) {
        case Family::kGptq: return gptq_config(layout, group_size);
        case Family::kAwq: return awq_config(group_size);
        case Family::kCtPacked:
        case Family::kCtInt8: return ct_config(layout, group_size);
    }
    return nullptr;
}

bool is_quantized_linear(const TensorData& t) {
    return ends_with(t.name, "_proj.weight") && t.shape.size() == 2;
}

}  // namespace

std::vector<IntLayout> all_int_layouts() {
    return {IntLayout::kGptq,    IntLayout::kGptqAsym,    IntLayout::kGptqActOrder, IntLayout::kGptqV2,
            IntLayout::kAwq,     IntLayout::kCtW4A16,     IntLayout::kCtW4A16Asym,  IntLayout::kCtW4A16ActOrder,
            IntLayout::kCtW8A8,  IntLayout::kCtW8A16};
}

bool int_layout_symmetric(IntLayout layout) {
    return layout != IntLayout::kGptqAsym && layout != IntLayout::kGptqV2 && layout != IntLayout::kAwq &&
           layout != IntLayout::kCtW4A16Asym;
}

bool int_layout_act_order(IntLayout layout) {
    return layout == IntLayout::kGptqActOrder || layout == IntLayout::kCtW4A16ActOrder;
}

bool int_layout_int8(IntLayout layout) { return layout == IntLayout::kCtW8A8 || layout == IntLayout::kCtW8A16; }

std::string int_layout_name(IntLayout layout) {
    switch (layout) {
        case IntLayout::kGptq: return "gptq";
        case IntLayout::kGptqAsym: return "gptq_asym";
        case IntLayout::kGptqActOrder: return "gptq_act_order";
        case IntLayout::kGptqV2: return "gptq_v2";
        case IntLayout::kAwq: return "awq";
        case IntLayout::kCtW4A16: return "ct_w4a16";
        case IntLayout::kCtW4A16Asym: return "ct_w4a16_asym";
        case IntLayout::kCtW4A16ActOrder: return "ct_w4a16_act_order";
        case IntLayout::kCtW8A8: return "ct_w8a8";
        case IntLayout::kCtW8A16: return "ct_w8a16";
    }
    return "?";
}

IntCheckpoint quantize_int(const TinyModel& model, IntLayout layout, int group_size) {
    if (group_size <= 0) throw std::invalid_argument("int_checkpoint_writer: group_size must be positive");
    IntCheckpoint out;
    out.packed.config = model.config;
    out.dequantized.config = model.config;
    out.dequantized.config.erase("quantization_config");
    const bool int8 = family_of(layout) == Family::kCtInt8;
    for (const TensorData& t : model.tensors) {
        if (!is_quantized_linear(t)) {
            out.packed.tensors.push_back(t);
            out.dequantized.tensors.push_back(t);
            continue;
        }
        const int64_t k = t.shape[1];
        // int8 is per output channel: one group spanning every column.
        const int64_t g = int8 ? k : group_size;
        const Quantizer qz{int8 ? 8 : 4, int_layout_symmetric(layout), zero_range(layout),
                           scale_dtype_of(layout, t.dtype)};
        const std::string module = t.name.substr(0, t.name.size() - std::string(".weight").size());
        std::vector<int32_t> group_of_col = group_of_columns(module, k, g, int_layout_act_order(layout));
        IntLinear l = quantize_linear(t, qz, std::move(group_of_col), ceil_div(k, g));
        for (TensorData& p : packed_tensors(layout, l, qz.scale_dtype)) {
            out.packed.tensors.push_back(std::move(p));
        }
        out.dequantized.tensors.push_back(float_tensor(t.name, "F32", t.shape, dequantize(l)));
        out.linears.push_back(std::move(l));
    }
    out.packed.config["quantization_config"] = quantization_config(layout, group_size);
    return out;
}

}  // namespace hichat::model::testing
