// Self-checks of the integer checkpoint writer (int_checkpoint_writer.h), without the loader: the
// packed tensors have each format's names, dtypes and shapes and decode, by the formats' own rules
// written out again here, to the recorded integers; the dequantized model is those integers times
// their scales and within half a step of the original weights (round to nearest); act-order group
// maps are a permutation cut into groups; and a few packed words equal sums computed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "base/dtype.h"
#include "common/fixtures.h"
#include "int_checkpoint_writer.h"

namespace hichat::model {
namespace {

using testing::IntCheckpoint;
using testing::IntLayout;
using testing::IntLinear;
using testing::TensorData;
using testing::TinyModel;

// ---- What the formats say, restated for the checks.

enum class Family { kGptq, kAwq, kCtPacked, kCtInt8 };

Family family(IntLayout layout) {
    const std::string name = testing::int_layout_name(layout);
    if (name.rfind("gptq", 0) == 0) return Family::kGptq;
    if (name == "awq") return Family::kAwq;
    return name.rfind("ct_w8", 0) == 0 ? Family::kCtInt8 : Family::kCtPacked;
}

bool gptq_v1(IntLayout layout) { return family(layout) == Family::kGptq && layout != IntLayout::kGptqV2; }

// The stored scale dtype: f16 for GPTQ / AWQ, the model's dtype (bf16 for the fixtures) for compressed-tensors.
std::string scale_dtype(IntLayout layout) {
    return family(layout) == Family::kGptq || family(layout) == Family::kAwq ? "F16" : "BF16";
}

// AWQ's GEMM packing puts column 8c + [0, 2, 4, 6, 1, 3, 5, 7][j] at nibble j; this is where column
// 8c + i sits.
constexpr std::array<int, 8> kAwqNibbleOfColumn = {0, 4, 1, 5, 2, 6, 3, 7};

// ---- Reading tensors.

const TensorData* find(const TinyModel& m, const std::string& name) {
    for (const TensorData& t : m.tensors) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

const TensorData& get(const TinyModel& m, const std::string& name) {
    const TensorData* t = find(m, name);
    if (t == nullptr) throw std::runtime_error("no tensor " + name);
    return *t;
}

uint32_t word(const TensorData& t, int64_t i) {
    uint32_t w;
    std::memcpy(&w, t.bytes.data() + 4 * i, 4);
    return w;
}

int nibble(uint32_t w, int j) { return static_cast<int>((w >> (4 * j)) & 0xfu); }


float round_to(const std::string& dtype, float v) {
    return dtype == "F16" ? f16_to_f32(f32_to_f16(v)) : dtype == "BF16" ? bf16_to_f32(f32_to_bf16(v)) : v;
}

size_t at(int64_t i) { return static_cast<size_t>(i); }

int32_t code(const IntLinear& l, int64_t r, int64_t c) { return l.q[at(r * l.k + c)]; }
int32_t zero_of(const IntLinear& l, int64_t r, int64_t g) { return l.zero[at(r * l.groups + g)]; }

// sum_j nibbles[j] << 4j, the word a reader splits into the eight values.
uint32_t hand_word(const std::array<int32_t, 8>& nibbles) {
    uint32_t w = 0;
    for (uint32_t j = 0; j < 8; ++j) w += static_cast<uint32_t>(nibbles[j]) << (4 * j);
    return w;
}

int64_t element_count(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// One module's tensors as a reader sees them, decoded back into the IntLinear convention.
IntLinear decode(const TinyModel& packed, IntLayout layout, const std::string& m, int64_t n, int64_t k,
                 int64_t g) {
    IntLinear l;
    l.module = m;
    l.n = n;
    l.k = k;
    l.bits = testing::int_layout_int8(layout) ? 8 : 4;
    l.groups = testing::int_layout_int8(layout) ? 1 : (k + g - 1) / g;
    l.q.resize(at(n * k));
    l.zero.resize(at(n * l.groups));
    l.scale.resize(at(n * l.groups));
    l.group_of_col.resize(at(k));
    for (int64_t c = 0; c < k; ++c) l.group_of_col[at(c)] = !testing::int_layout_int8(layout) ? static_cast<int32_t>(c / g) : 0;
    switch (family(layout)) {
        case Family::kGptq: {
            const TensorData &qweight = get(packed, m + ".qweight"), &qzeros = get(packed, m + ".qzeros"),
                             &scales = get(packed, m + ".scales"), &g_idx = get(packed, m + ".g_idx");
            for (int64_t c = 0; c < k; ++c) l.group_of_col[at(c)] = static_cast<int32_t>(word(g_idx, c));
            for (int64_t col = 0; col < n; ++col) {
                for (int64_t row = 0; row < k; ++row) {
                    const int j = static_cast<int>(row % 8);
                    l.q[at(col * k + row)] = nibble(word(qweight, (row / 8) * n + col), j);
                }
                for (int64_t gr = 0; gr < l.groups; ++gr) {
                    const int stored = nibble(word(qzeros, gr * (n / 8) + col / 8), static_cast<int>(col % 8));
                    l.zero[at(col * l.groups + gr)] = gptq_v1(layout) ? stored + 1 : stored;
                    l.scale[at(col * l.groups + gr)] = tensor_value(scales, gr * n + col);
                }
            }
            break;
        }
        case Family::kAwq: {
            const TensorData &qweight = get(packed, m + ".qweight"), &qzeros = get(packed, m + ".qzeros"),
                             &scales = get(packed, m + ".scales");
            for (int64_t col = 0; col < n; ++col) {
                const int j = kAwqNibbleOfColumn[at(col % 8)];
                for (int64_t row = 0; row < k; ++row) {
                    l.q[at(col * k + row)] = nibble(word(qweight, row * (n / 8) + col / 8), j);
                }
                for (int64_t gr = 0; gr < l.groups; ++gr) {
                    l.zero[at(col * l.groups + gr)] = nibble(word(qzeros, gr * (n / 8) + col / 8), j);
                    l.scale[at(col * l.groups + gr)] = tensor_value(scales, gr * n + col);
                }
            }
            break;
        }
        case Family::kCtPacked: {
            const TensorData& packed_w = get(packed, m + ".weight_packed");
            const TensorData& scale = get(packed, m + ".weight_scale");
            const TensorData* zero_point = find(packed, m + ".weight_zero_point");
            const TensorData* g_idx = find(packed, m + ".weight_g_idx");
            if (g_idx != nullptr) {
                for (int64_t c = 0; c < k; ++c) l.group_of_col[at(c)] = static_cast<int32_t>(word(*g_idx, c));
            }
            const int64_t words_k = (k + 7) / 8;
            for (int64_t r = 0; r < n; ++r) {
                for (int64_t c = 0; c < k; ++c) {
                    l.q[at(r * k + c)] = nibble(word(packed_w, r * words_k + c / 8), static_cast<int>(c % 8));
                }
                for (int64_t gr = 0; gr < l.groups; ++gr) {
                    const int j = static_cast<int>(r % 8);
                    const int zp = zero_point ? nibble(word(*zero_point, (r / 8) * l.groups + gr), j) : 8;
                    l.zero[at(r * l.groups + gr)] = zp;
                    l.scale[at(r * l.groups + gr)] = tensor_value(scale, r * l.groups + gr);
                }
            }
            break;
        }
        case Family::kCtInt8: {
            const TensorData &weight = get(packed, m + ".weight"), &scale = get(packed, m + ".weight_scale");
            for (int64_t i = 0; i < n * k; ++i) l.q[at(i)] = static_cast<int8_t>(weight.bytes[at(i)]);
            for (int64_t r = 0; r < n; ++r) l.scale[at(r)] = tensor_value(scale, r);
            break;
        }
    }
    return l;
}

// The tensors a module must have: name suffix, dtype and shape, as each format's description gives them.
// Suffix after the module name: dtype, shape.
using TensorSpecs = std::map<std::string, std::pair<std::string, std::vector<int64_t>>>;

TensorSpecs expected_tensors(IntLayout layout, int64_t n, int64_t k, int64_t g) {
    const int64_t groups = (k + g - 1) / g;
    switch (family(layout)) {
        case Family::kGptq:
            return {{".qweight", {"I32", {k / 8, n}}}, {".qzeros", {"I32", {groups, n / 8}}},
                    {".scales", {"F16", {groups, n}}}, {".g_idx", {"I32", {k}}}};
        case Family::kAwq:
            return {{".qweight", {"I32", {k, n / 8}}}, {".qzeros", {"I32", {groups, n / 8}}},
                    {".scales", {"F16", {groups, n}}}};
        case Family::kCtPacked: {
            TensorSpecs out = {
                {".weight_packed", {"I32", {n, (k + 7) / 8}}}, {".weight_scale", {"BF16", {n, groups}}},
                {".weight_shape", {"I32", {2}}}};
            if (!testing::int_layout_symmetric(layout)) out[".weight_zero_point"] = {"I32", {(n + 7) / 8, groups}};
            if (testing::int_layout_act_order(layout)) out[".weight_g_idx"] = {"I32", {k}};
            return out;
        }
        case Family::kCtInt8: return {{".weight", {"I8", {n, k}}}, {".weight_scale", {"BF16", {n, 1}}}};
    }
    return {};
}

bool is_linear_weight(const TensorData& t) {
    return t.name.size() > 12 && t.name.compare(t.name.size() - 12, 12, "_proj.weight") == 0;
}

// ---- Every layout on every fixture.

using Case = std::tuple<std::string, IntLayout, int>;  // fixture, layout, group size

class IntWriterLayouts : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        original_ = testing::read_checkpoint(hichat::testing::fixture_dir(fixture()));
        q_ = testing::quantize_int(original_, layout(), group());
    }
    const std::string& fixture() const { return std::get<0>(GetParam()); }
    IntLayout layout() const { return std::get<1>(GetParam()); }
    int group() const { return std::get<2>(GetParam()); }
    int64_t group_of(const IntLinear& l) const { return !testing::int_layout_int8(layout()) ? group() : l.k; }

    TinyModel original_;
    IntCheckpoint q_;
};

TEST_P(IntWriterLayouts, QuantizesEveryProjectionAndCopiesTheRest) {
    std::set<std::string> linear_weights;
    for (const TensorData& t : original_.tensors) {
        if (is_linear_weight(t)) {
            linear_weights.insert(t.name);
            continue;
        }
        const TensorData* p = find(q_.packed, t.name);
        const TensorData* d = find(q_.dequantized, t.name);
        ASSERT_TRUE(p && d) << t.name;
        EXPECT_TRUE(p->dtype == t.dtype && p->shape == t.shape && p->bytes == t.bytes) << t.name;
        EXPECT_TRUE(d->dtype == t.dtype && d->shape == t.shape && d->bytes == t.bytes) << t.name;
    }
    ASSERT_EQ(q_.linears.size(), linear_weights.size());
    EXPECT_EQ(linear_weights.count("lm_head.weight"), 0u);
    for (const IntLinear& l : q_.linears) {
        EXPECT_EQ(linear_weights.count(l.module + ".weight"), 1u) << l.module;
        const TensorData& original = get(original_, l.module + ".weight");
        EXPECT_EQ(original.shape, (std::vector<int64_t>{l.n, l.k}));
        const TensorData& d = get(q_.dequantized, l.module + ".weight");
        EXPECT_EQ(d.dtype, "F32");
        EXPECT_EQ(d.shape, original.shape);
        // The packed model has the format's tensors for the module and nothing else under its name.
        const auto want = expected_tensors(layout(), l.n, l.k, group_of(l));
        size_t seen = 0;
        for (const TensorData& t : q_.packed.tensors) {
            if (t.name.rfind(l.module + ".", 0) != 0 || t.name.size() <= l.module.size() + 1) continue;
            const std::string suffix = t.name.substr(l.module.size());
            if (suffix == ".bias") continue;
            ++seen;
            const auto it = want.find(suffix);
            ASSERT_NE(it, want.end()) << t.name << " is not a tensor of " << testing::int_layout_name(layout());
            EXPECT_EQ(t.dtype, it->second.first) << t.name;
            EXPECT_EQ(t.shape, it->second.second) << t.name;
            const int64_t width = t.dtype == "I32" || t.dtype == "F32" ? 4 : t.dtype == "I8" ? 1 : 2;
            EXPECT_EQ(static_cast<int64_t>(t.bytes.size()), element_count(t.shape) * width) << t.name;
        }
        EXPECT_EQ(seen, want.size()) << l.module;
    }
    ASSERT_TRUE(q_.packed.config.contains("quantization_config"));
    EXPECT_FALSE(q_.dequantized.config.contains("quantization_config"));
    const testing::Json& qc = q_.packed.config["quantization_config"];
    switch (family(layout())) {
        case Family::kGptq:
            EXPECT_EQ(qc["quant_method"], "gptq");
            EXPECT_EQ(qc["bits"], 4);
            EXPECT_EQ(qc["group_size"], group());
            EXPECT_EQ(qc["sym"], testing::int_layout_symmetric(layout()));
            EXPECT_EQ(qc["desc_act"], testing::int_layout_act_order(layout()));
            EXPECT_EQ(qc["checkpoint_format"], gptq_v1(layout()) ? "gptq" : "gptq_v2");
            break;
        case Family::kAwq:
            EXPECT_EQ(qc["quant_method"], "awq");
            EXPECT_EQ(qc["version"], "gemm");
            EXPECT_EQ(qc["zero_point"], true);
            EXPECT_EQ(qc["group_size"], group());
            break;
        case Family::kCtPacked:
        case Family::kCtInt8: {
            EXPECT_EQ(qc["quant_method"], "compressed-tensors");
            const testing::Json& scheme = qc["config_groups"]["group_0"];
            const testing::Json& w = scheme["weights"];
            if (family(layout()) == Family::kCtPacked) {
                EXPECT_EQ(qc["format"], "pack-quantized");
                EXPECT_EQ(w["num_bits"], 4);
                EXPECT_EQ(w["strategy"], "group");
                EXPECT_EQ(w["group_size"], group());
                EXPECT_EQ(w["symmetric"], testing::int_layout_symmetric(layout()));
                EXPECT_EQ(w["actorder"], testing::int_layout_act_order(layout()) ? testing::Json("group") : testing::Json(nullptr));
                EXPECT_TRUE(scheme["input_activations"].is_null());
            } else {
                EXPECT_EQ(qc["format"], "int-quantized");
                EXPECT_EQ(w["num_bits"], 8);
                EXPECT_EQ(w["strategy"], "channel");
                const testing::Json& acts = scheme["input_activations"];
                if (layout() == IntLayout::kCtW8A8) {
                    EXPECT_EQ(acts["strategy"], "token");
                    EXPECT_EQ(acts["dynamic"], true);
                    EXPECT_EQ(acts["num_bits"], 8);
                } else {
                    EXPECT_TRUE(acts.is_null());
                }
            }
            EXPECT_EQ(w["type"], "int");
            break;
        }
    }
}

TEST_P(IntWriterLayouts, CodesZerosAndScalesInRange) {
    for (const IntLinear& l : q_.linears) {
        const int64_t g = group_of(l);
        ASSERT_EQ(l.groups, (l.k + g - 1) / g) << l.module;
        ASSERT_EQ(l.q.size(), at(l.n * l.k));
        ASSERT_EQ(l.zero.size(), at(l.n * l.groups));
        ASSERT_EQ(l.scale.size(), at(l.n * l.groups));
        ASSERT_EQ(l.group_of_col.size(), at(l.k));
        const int q_lo = !testing::int_layout_int8(layout()) ? 0 : -127, q_hi = !testing::int_layout_int8(layout()) ? 15 : 127;
        for (int32_t q : l.q) ASSERT_TRUE(q >= q_lo && q <= q_hi) << l.module << " code " << q;
        for (int32_t c : l.group_of_col) ASSERT_TRUE(c >= 0 && c < l.groups) << l.module;
        const int zero_lo = testing::int_layout_symmetric(layout()) ? (!testing::int_layout_int8(layout()) ? 8 : 0) : gptq_v1(layout()) ? 1 : 0;
        const int zero_hi = testing::int_layout_symmetric(layout()) ? zero_lo : zero_lo + 15;
        for (int32_t z : l.zero) ASSERT_TRUE(z >= zero_lo && z <= zero_hi) << l.module << " zero " << z;
        for (float s : l.scale) {
            ASSERT_GT(s, 0.0f) << l.module;
            ASSERT_EQ(round_to(scale_dtype(layout()), s), s) << l.module << " scale inexact";
        }
        if (!testing::int_layout_symmetric(layout())) {
            // Both ends of the zero range occur (GPTQ v1: 16, the stored nibble 15).
            EXPECT_NE(std::find(l.zero.begin(), l.zero.end(), zero_lo), l.zero.end()) << l.module;
            EXPECT_NE(std::find(l.zero.begin(), l.zero.end(), zero_hi), l.zero.end()) << l.module;
        }
    }
}

TEST_P(IntWriterLayouts, DequantizedIsRoundToNearestOfTheOriginal) {
    for (const IntLinear& l : q_.linears) {
        const TensorData& original = get(original_, l.module + ".weight");
        const TensorData& d = get(q_.dequantized, l.module + ".weight");
        const int q_lo = !testing::int_layout_int8(layout()) ? 0 : -127, q_hi = !testing::int_layout_int8(layout()) ? 15 : 127;
        for (int64_t r = 0; r < l.n; ++r) {
            for (int64_t c = 0; c < l.k; ++c) {
                const auto gi = at(r * l.groups + l.group_of_col[at(c)]);
                const int32_t q = l.q[at(r * l.k + c)];
                const double s = l.scale[gi];
                const float want = static_cast<float>((q - l.zero[gi]) * s);
                ASSERT_EQ(tensor_value(d, r * l.k + c), want) << l.module << " [" << r << ", " << c << "]";
                // Round to nearest: within half a step, except where an asymmetric code sits at the
                // end of its range (the weight may have been clamped there).
                if (!testing::int_layout_symmetric(layout()) && (q == q_lo || q == q_hi)) continue;
                const double w = tensor_value(original, r * l.k + c);
                ASSERT_LE(std::fabs(want - w), s / 2 * (1 + 1e-6) + 1e-9)
                    << l.module << " [" << r << ", " << c << "] w " << w << " q " << q << " zero " << l.zero[gi]
                    << " scale " << s;
            }
        }
    }
}

TEST_P(IntWriterLayouts, PackedTensorsDecodeToTheRecordedIntegers) {
    for (const IntLinear& l : q_.linears) {
        const IntLinear got = decode(q_.packed, layout(), l.module, l.n, l.k, group_of(l));
        EXPECT_EQ(got.group_of_col, l.group_of_col) << l.module;
        EXPECT_EQ(got.q, l.q) << l.module;
        EXPECT_EQ(got.zero, l.zero) << l.module;
        EXPECT_EQ(got.scale, l.scale) << l.module;
        if (family(layout()) == Family::kCtPacked) {
            const TensorData& shape = get(q_.packed, l.module + ".weight_shape");
            EXPECT_EQ(static_cast<int64_t>(word(shape, 0)), l.n);
            EXPECT_EQ(static_cast<int64_t>(word(shape, 1)), l.k);
            // Nibbles past K and past N (none in the fixtures' sizes, which are multiples of 8) are zero.
            const TensorData& packed = get(q_.packed, l.module + ".weight_packed");
            const int64_t words_k = (l.k + 7) / 8;
            for (int64_t r = 0; r < l.n; ++r) {
                for (int64_t c = l.k; c < words_k * 8; ++c) {
                    EXPECT_EQ(nibble(word(packed, r * words_k + c / 8), static_cast<int>(c % 8)), 0);
                }
            }
        }
    }
}

TEST_P(IntWriterLayouts, WrittenFolderReadsBackAsIs) {
    testing::TempDir dir;
    q_.packed.write(dir.path());
    const TinyModel back = testing::read_checkpoint(dir.path());
    EXPECT_EQ(back.config, q_.packed.config);
    ASSERT_EQ(back.tensors.size(), q_.packed.tensors.size());
    for (const TensorData& t : q_.packed.tensors) {
        const TensorData* b = find(back, t.name);
        ASSERT_NE(b, nullptr) << t.name;
        EXPECT_TRUE(b->dtype == t.dtype && b->shape == t.shape && b->bytes == t.bytes) << t.name;
    }
}

TEST_P(IntWriterLayouts, Deterministic) {
    const IntCheckpoint again = testing::quantize_int(original_, layout(), group());
    ASSERT_EQ(again.packed.tensors.size(), q_.packed.tensors.size());
    for (size_t i = 0; i < again.packed.tensors.size(); ++i) {
        EXPECT_EQ(again.packed.tensors[i].name, q_.packed.tensors[i].name);
        EXPECT_EQ(again.packed.tensors[i].bytes, q_.packed.tensors[i].bytes) << q_.packed.tensors[i].name;
    }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    return std::get<0>(info.param) + "_" + testing::int_layout_name(std::get<1>(info.param)) + "_g" +
           std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, IntWriterLayouts,
                         ::testing::Combine(::testing::ValuesIn(hichat::testing::fixture_names()),
                                            ::testing::ValuesIn(testing::all_int_layouts()),
                                            ::testing::Values(128)),
                         case_name);
// Smaller groups: several groups per row everywhere, so q/k/v and gate/up have act-order permutations too.
INSTANTIATE_TEST_SUITE_P(SmallGroups, IntWriterLayouts,
                         ::testing::Combine(::testing::Values("llama3", "qwen2"),
                                            ::testing::ValuesIn(testing::all_int_layouts()),
                                            ::testing::Values(32)),
                         case_name);

// ---- Single words and group maps, by hand.

TinyModel llama3() { return testing::read_checkpoint(hichat::testing::fixture_dir("llama3")); }

const IntLinear& linear(const IntCheckpoint& q, const std::string& module) {
    for (const IntLinear& l : q.linears) {
        if (l.module == module) return l;
    }
    throw std::runtime_error("no linear " + module);
}

constexpr const char* kQ = "model.layers.0.self_attn.q_proj";
constexpr const char* kDown = "model.layers.1.mlp.down_proj";

TEST(IntCheckpointWriter, LayoutNamesAreDistinct) {
    std::set<std::string> names;
    for (IntLayout layout : testing::all_int_layouts()) names.insert(testing::int_layout_name(layout));
    EXPECT_EQ(names.size(), 10u);
    EXPECT_EQ(names.count("gptq"), 1u);
    EXPECT_EQ(names.count("gptq_asym"), 1u);
    EXPECT_EQ(names.count("ct_w4a16_asym"), 1u);
}

TEST(IntCheckpointWriter, GptqWordPacksEightInputRowsOfAColumn) {
    const IntCheckpoint q = testing::quantize_int(llama3(), IntLayout::kGptq);
    const IntLinear& l = linear(q, kQ);
    const TensorData& qweight = get(q.packed, std::string(kQ) + ".qweight");
    // Word (1, 5): input rows 8..15 of output column 5.
    std::array<int32_t, 8> rows{};
    for (int j = 0; j < 8; ++j) rows[at(j)] = code(l, 5, 8 + j);
    EXPECT_EQ(word(qweight, 1 * l.n + 5), hand_word(rows));
    // Symmetric v1: zero 8 stored as 7 in every nibble.
    const TensorData& qzeros = get(q.packed, std::string(kQ) + ".qzeros");
    for (int64_t i = 0; i < element_count(qzeros.shape); ++i) ASSERT_EQ(word(qzeros, i), 0x77777777u);
    const TensorData& g_idx = get(q.packed, std::string(kQ) + ".g_idx");
    for (int64_t c = 0; c < l.k; ++c) EXPECT_EQ(word(g_idx, c), static_cast<uint32_t>(c / 128));
}

TEST(IntCheckpointWriter, GptqV1StoresZeroMinusOneAndV2TheZero) {
    const TinyModel model = llama3();
    for (IntLayout layout : {IntLayout::kGptqAsym, IntLayout::kGptqV2}) {
        const IntCheckpoint q = testing::quantize_int(model, layout);
        const IntLinear& l = linear(q, kDown);
        const TensorData& qzeros = get(q.packed, std::string(kDown) + ".qzeros");
        bool saw_fifteen = false;
        for (int64_t gr = 0; gr < l.groups; ++gr) {
            // Word (gr, 0): the zeros of output columns 0..7.
            std::array<int32_t, 8> stored{};
            for (int j = 0; j < 8; ++j) {
                const int32_t zero = zero_of(l, j, gr);
                stored[at(j)] = layout == IntLayout::kGptqAsym ? (zero - 1) & 0xf : zero;
            }
            EXPECT_EQ(word(qzeros, gr * (l.n / 8)), hand_word(stored)) << testing::int_layout_name(layout);
        }
        for (int64_t i = 0; i < element_count(qzeros.shape); ++i) {
            for (int j = 0; j < 8; ++j) saw_fifteen |= nibble(word(qzeros, i), j) == 15;
        }
        EXPECT_TRUE(saw_fifteen) << testing::int_layout_name(layout);
        if (layout == IntLayout::kGptqAsym) {
            EXPECT_NE(std::find(l.zero.begin(), l.zero.end(), 16), l.zero.end()) << "v1: stored 15, zero 16";
        }
    }
}

TEST(IntCheckpointWriter, AwqWordInterleavesColumns) {
    const IntCheckpoint q = testing::quantize_int(llama3(), IntLayout::kAwq);
    const IntLinear& l = linear(q, kDown);
    const TensorData& qweight = get(q.packed, std::string(kDown) + ".qweight");
    // Word (input row 3, c = 2) holds output columns 16 + [0, 2, 4, 6, 1, 3, 5, 7] in nibbles 0..7.
    const std::array<int64_t, 8> columns = {16, 18, 20, 22, 17, 19, 21, 23};
    std::array<int32_t, 8> codes{};
    for (int j = 0; j < 8; ++j) codes[at(j)] = code(l, columns[at(j)], 3);
    EXPECT_EQ(word(qweight, 3 * (l.n / 8) + 2), hand_word(codes));
    // Group row 1, word 0: the zeros of columns 0, 2, 4, 6, 1, 3, 5, 7, stored as they are.
    const TensorData& qzeros = get(q.packed, std::string(kDown) + ".qzeros");
    const std::array<int64_t, 8> first = {0, 2, 4, 6, 1, 3, 5, 7};
    std::array<int32_t, 8> zeros{};
    for (int j = 0; j < 8; ++j) zeros[at(j)] = zero_of(l, first[at(j)], 1);
    EXPECT_EQ(word(qzeros, 1 * (l.n / 8)), hand_word(zeros));
    EXPECT_EQ(find(q.packed, std::string(kDown) + ".g_idx"), nullptr);
}

TEST(IntCheckpointWriter, CompressedTensorsWordsHoldValuePlusEight) {
    const IntCheckpoint q = testing::quantize_int(llama3(), IntLayout::kCtW4A16Asym);
    const IntLinear& l = linear(q, kDown);
    const TensorData& packed = get(q.packed, std::string(kDown) + ".weight_packed");
    // Row 2, word 19: input columns 152..159 (the last of K = 160).
    std::array<int32_t, 8> codes{};
    for (int j = 0; j < 8; ++j) codes[at(j)] = code(l, 2, 152 + j);
    EXPECT_EQ(word(packed, 2 * 20 + 19), hand_word(codes));
    // Zero points packed along N: word (0, group 0) holds rows 0..7; zp + 8 = the recorded zero.
    const TensorData& zp = get(q.packed, std::string(kDown) + ".weight_zero_point");
    std::array<int32_t, 8> zeros{};
    for (int j = 0; j < 8; ++j) zeros[at(j)] = zero_of(l, j, 0);
    EXPECT_EQ(word(zp, 0), hand_word(zeros));
    // Both extreme zero points: zp -8 (nibble 0) and zp 7 (nibble 15).
    EXPECT_NE(std::find(l.zero.begin(), l.zero.end(), 0), l.zero.end());
    EXPECT_NE(std::find(l.zero.begin(), l.zero.end(), 15), l.zero.end());
    const TensorData& shape = get(q.packed, std::string(kDown) + ".weight_shape");
    EXPECT_EQ(word(shape, 0), 64u);
    EXPECT_EQ(word(shape, 1), 160u);
}

TEST(IntCheckpointWriter, LastGroupIsPartial) {
    const IntCheckpoint q = testing::quantize_int(llama3(), IntLayout::kGptqAsym);
    const IntLinear& l = linear(q, kDown);  // K = 160 with groups of 128: 128 + 32
    EXPECT_EQ(l.groups, 2);
    EXPECT_EQ(std::count(l.group_of_col.begin(), l.group_of_col.end(), 1), 32);
    EXPECT_EQ(get(q.packed, std::string(kDown) + ".scales").shape, (std::vector<int64_t>{2, 64}));
}

// Each group value occurs g times (the last K - (G - 1) g), and the columns of a group are not
// consecutive (the permutation is not the identity).
void expect_permutation_group_map(const std::vector<int32_t>& g_idx, int64_t g, const std::string& what) {
    const auto k = static_cast<int64_t>(g_idx.size());
    const int64_t groups = (k + g - 1) / g;
    for (int64_t gr = 0; gr < groups; ++gr) {
        const int64_t want = gr + 1 < groups ? g : k - (groups - 1) * g;
        EXPECT_EQ(std::count(g_idx.begin(), g_idx.end(), static_cast<int32_t>(gr)), want)
            << what << " group " << gr;
    }
    if (groups > 1) {
        EXPECT_FALSE(std::is_sorted(g_idx.begin(), g_idx.end())) << what;
    }
}

TEST(IntCheckpointWriter, ActOrderGroupMapsArePermutationsSharedByModulesOfOneInput) {
    const TinyModel model = llama3();
    for (int g : {128, 32}) {
        const IntCheckpoint gptq = testing::quantize_int(model, IntLayout::kGptqActOrder, g);
        const IntCheckpoint ct = testing::quantize_int(model, IntLayout::kCtW4A16ActOrder, g);
        for (const IntLinear& l : gptq.linears) {
            expect_permutation_group_map(l.group_of_col, g, l.module);
            // The same construction in both formats.
            EXPECT_EQ(linear(ct, l.module).group_of_col, l.group_of_col) << l.module;
        }
        for (const std::string layer : {"model.layers.0.", "model.layers.1."}) {
            const auto& q = linear(gptq, layer + "self_attn.q_proj").group_of_col;
            EXPECT_EQ(linear(gptq, layer + "self_attn.k_proj").group_of_col, q) << layer;
            EXPECT_EQ(linear(gptq, layer + "self_attn.v_proj").group_of_col, q) << layer;
            const auto& gate = linear(gptq, layer + "mlp.gate_proj").group_of_col;
            EXPECT_EQ(linear(gptq, layer + "mlp.up_proj").group_of_col, gate) << layer;
        }
        // Layers have their own orders.
        if (g == 32) {
            EXPECT_NE(linear(gptq, "model.layers.0.self_attn.q_proj").group_of_col,
                      linear(gptq, "model.layers.1.self_attn.q_proj").group_of_col);
            EXPECT_NE(linear(gptq, "model.layers.0.mlp.down_proj").group_of_col,
                      linear(gptq, "model.layers.1.mlp.down_proj").group_of_col);
        }
    }
    // Without act-order the group of column c is c / g.
    const IntCheckpoint plain = testing::quantize_int(model, IntLayout::kCtW4A16, 32);
    for (const IntLinear& l : plain.linears) {
        for (int64_t c = 0; c < l.k; ++c) ASSERT_EQ(l.group_of_col[at(c)], c / 32) << l.module;
    }
}

}  // namespace
}  // namespace hichat::model
