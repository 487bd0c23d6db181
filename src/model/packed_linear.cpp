#include "model/packed_linear.h"

#include <cstring>

#include "model/tensor_layout.h"

namespace hichat::model {
namespace {

using Shape = std::vector<int64_t>;


bool is_float(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

// The tensor names of each packing, after "<module>.".
struct PackingNames {
    const char* codes;
    const char* scales;
    const char* zeros;
    const char* g_idx;
};

PackingNames names_of(IntPacking p) {
    switch (p) {
        case IntPacking::kGptq:
        case IntPacking::kAwq: return {"qweight", "scales", "qzeros", "g_idx"};
        case IntPacking::kCtPacked: return {"weight_packed", "weight_scale", "weight_zero_point", "weight_g_idx"};
        case IntPacking::kCtInt8:
        case IntPacking::kNone: break;
    }
    return {"weight", "weight_scale", "weight_zero_point", "weight_g_idx"};
}

// Checks the tensors of one module, adding a problem per fault.
class PackedChecker {
public:
    PackedChecker(const WeightFiles& files, const QuantConfig& q, const std::string& module, int64_t n, int64_t k,
                  const TakeTensor& take, std::vector<std::string>& problems)
        : files_(files), q_(q), module_(module), n_(n), k_(k), take_(take), problems_(problems) {}

    // The tensor `<module>.<part>` of `dtype` (F32 meaning any float type) and one of `shapes`;
    // null (with a problem when `required`) otherwise.
    const SafetensorsTensor* get(const char* part, DType dtype, const std::vector<Shape>& shapes, bool required,
                                 const char* why = "") {
        const std::string name = module_ + "." + part;
        const WeightFiles::Entry* entry = take_(name);
        if (entry == nullptr) {
            if (required) fault(files_.source + ": missing tensor '" + name + "'" + why);
            return nullptr;
        }
        const SafetensorsTensor& t = *entry->tensor;
        const bool dtype_ok = dtype == DType::kF32 ? is_float(t.dtype)
                              : dtype == DType::kI32 ? (t.dtype == DType::kI32 || (part == std::string("weight_shape") &&
                                                                                   t.dtype == DType::kI64))
                                                     : t.dtype == dtype;
        if (!dtype_ok) {
            fault(entry->file->path() + ": tensor '" + name + "' is " + std::string(dtype_name(t.dtype)) + "; " +
                  q_.describe() + " stores it as " + (dtype == DType::kF32 ? "F32, BF16 or F16" : std::string(dtype_name(dtype))));
            return nullptr;
        }
        for (const Shape& s : shapes) {
            if (t.shape == s) return &t;
        }
        std::string expected;
        for (const Shape& s : shapes) expected += (expected.empty() ? "" : " or ") + shape_string(s);
        fault(entry->file->path() + ": tensor '" + name + "' has shape " + shape_string(t.shape) + "; " + q_.describe() +
              " for a " + shape_string({n_, k_}) + " weight needs " + expected);
        return nullptr;
    }

    // A dimension the packing needs a multiple of `m`.
    bool multiple(int64_t value, int64_t m, const char* what) {
        if (value % m == 0) return true;
        fault(files_.source + ": linear '" + module_ + "' has " + what + " " + std::to_string(value) + "; " +
              q_.describe() + " packs " + std::to_string(m) + " per int32, so it must be a multiple of " + std::to_string(m));
        return false;
    }

    // compressed-tensors' weight_shape: [n, k] when present.
    void check_shape_tensor(const SafetensorsTensor* t) {
        if (t == nullptr) return;
        const int64_t size = dtype_size_bytes(t->dtype);
        int64_t dims[2] = {0, 0};
        for (int i = 0; i < 2; ++i) {
            if (size == 4) {
                int32_t v;
                std::memcpy(&v, static_cast<const char*>(t->data) + 4 * i, 4);
                dims[i] = v;
            } else {
                std::memcpy(&dims[i], static_cast<const char*>(t->data) + 8 * i, 8);
            }
        }
        if (dims[0] != n_ || dims[1] != k_) {
            fault(files_.source + ": tensor '" + module_ + ".weight_shape' holds " + shape_string({dims[0], dims[1]}) +
                  ", config.json implies " + shape_string({n_, k_}));
        }
    }

    bool ok() const { return ok_; }

private:
    void fault(std::string what) {
        problems_.push_back(std::move(what));
        ok_ = false;
    }

    const WeightFiles& files_;
    const QuantConfig& q_;
    const std::string& module_;
    int64_t n_, k_;
    const TakeTensor& take_;
    std::vector<std::string>& problems_;
    bool ok_ = true;
};

// Takes `<module>.bias` when every element is zero (AutoGPTQ stores one for every layer).
void take_zero_bias(const WeightFiles& files, const std::string& module, const TakeTensor& take) {
    auto it = files.tensors.find(module + ".bias");
    if (it == files.tensors.end() || !is_float(it->second.tensor->dtype)) return;
    const SafetensorsTensor& t = *it->second.tensor;
    const int64_t count = static_cast<int64_t>(t.num_bytes) / dtype_size_bytes(t.dtype);
    for (int64_t i = 0; i < count; ++i) {
        if (load_as_f32(t.data, t.dtype, i) != 0.0f) return;  // bound as a bias, or reported as unexpected
    }
    take(module + ".bias");
}

}  // namespace

int64_t scale_groups(const QuantConfig& q, int64_t k) {
    return q.group_size > 0 ? (k + q.group_size - 1) / q.group_size : 1;
}

bool find_packed_linear(const WeightFiles& files, const QuantConfig& q, const std::string& name, const Shape& shape,
                        WeightTensor* slot, const TakeTensor& take, std::vector<PackedLinear>& out,
                        std::vector<std::string>& problems) {
    const std::string module = name.substr(0, name.size() - std::string(".weight").size());
    const int64_t n = shape[0], k = shape[1], groups = scale_groups(q, k);
    auto plain = files.tensors.find(name);
    if (plain != files.tensors.end() && is_float(plain->second.tensor->dtype)) return false;
    const PackingNames names = names_of(q.packing);
    PackedChecker check(files, q, module, n, k, take, problems);
    PackedLinear p{module, slot, n, k};
    const bool zeros_required = !q.symmetric;
    const char* why_zeros = " (the zero points of an asymmetric checkpoint)";
    const char* why_g_idx = " (the column groups of an activation-order checkpoint)";
    switch (q.packing) {
        case IntPacking::kGptq:
            if (!check.multiple(k, 8, "in_features") || !check.multiple(n, 8, "out_features")) return true;
            p.codes = check.get(names.codes, DType::kI32, {{k / 8, n}}, true);
            p.zeros = check.get(names.zeros, DType::kI32, {{groups, n / 8}}, zeros_required, why_zeros);
            p.scales = check.get(names.scales, DType::kF32, {{groups, n}}, true);
            p.g_idx = check.get(names.g_idx, DType::kI32, {{k}}, q.act_order, why_g_idx);
            take_zero_bias(files, module, take);
            break;
        case IntPacking::kAwq:
            if (!check.multiple(n, 8, "out_features")) return true;
            p.codes = check.get(names.codes, DType::kI32, {{k, n / 8}}, true);
            p.zeros = check.get(names.zeros, DType::kI32, {{groups, n / 8}}, zeros_required, why_zeros);
            p.scales = check.get(names.scales, DType::kF32, {{groups, n}}, true);
            break;
        case IntPacking::kCtPacked: {
            const int64_t per_word = 32 / q.bits;
            p.codes = check.get(names.codes, DType::kI32, {{n, (k + per_word - 1) / per_word}}, true);
            p.scales = check.get(names.scales, DType::kF32, groups == 1 ? std::vector<Shape>{{n, 1}, {n}} : std::vector<Shape>{{n, groups}}, true);
            p.zeros = check.get(names.zeros, DType::kI32, {{(n + per_word - 1) / per_word, groups}}, zeros_required, why_zeros);
            p.g_idx = check.get(names.g_idx, DType::kI32, {{k}}, q.act_order, why_g_idx);
            check.check_shape_tensor(check.get("weight_shape", DType::kI32, {{2}}, false));
            break;
        }
        case IntPacking::kCtInt8:
            p.codes = check.get(names.codes, DType::kI8, {{n, k}}, true);
            p.scales = check.get(names.scales, DType::kF32, {{n, 1}, {n}}, true);
            break;
        case IntPacking::kNone: return false;
    }
    if (q.symmetric && q.packing != IntPacking::kGptq) p.zeros = nullptr;  // only GPTQ stores the 8s
    if (check.ok()) out.push_back(p);
    return true;
}

}  // namespace hichat::model
