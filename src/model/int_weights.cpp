#include "model/int_weights.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "base/check.h"
#include "base/dtype.h"
#include "base/q4_layout.h"

namespace hichat::model {
namespace {

constexpr float kF16Max = 65504.0f;

// AWQ packs 8 output columns per int32 in the order 0 2 4 6 1 3 5 7: column j sits at nibble kAwqNibble[j].
constexpr int kAwqNibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};

int32_t load_i32(const SafetensorsTensor& t, int64_t index) {
    int32_t v;
    std::memcpy(&v, static_cast<const char*>(t.data) + 4 * index, 4);
    return v;
}

int nibble(int32_t word, int position) { return static_cast<int>((static_cast<uint32_t>(word) >> (4 * position)) & 15u); }

// One PackedLinear's codes, scales and zero points as its format means them: w[r, c] =
// (code(r, c) - zero(r, g)) * scale(r, g) with g = group(c).
class PackedReader {
public:
    PackedReader(const PackedLinear& p, const QuantConfig& q)
        : p_(p), q_(q), groups_(scale_groups(q, p.k)), per_word_(q.bits > 0 ? 32 / q.bits : 1),
          words_per_row_((p.k + per_word_ - 1) / per_word_) {}

    // 4-bit: 0..15; 8-bit: -128..127.
    int code(int64_t r, int64_t c) const {
        switch (q_.packing) {
            case IntPacking::kGptq: return nibble(load_i32(*p_.codes, (c / 8) * p_.n + r), static_cast<int>(c % 8));
            case IntPacking::kAwq: return nibble(load_i32(*p_.codes, c * (p_.n / 8) + r / 8), kAwqNibble[r % 8]);
            case IntPacking::kCtPacked: {
                const auto word = static_cast<uint32_t>(load_i32(*p_.codes, r * words_per_row_ + c / per_word_));
                const int field = static_cast<int>((word >> (q_.bits * (c % per_word_))) & ((1u << q_.bits) - 1));
                return q_.bits == 8 ? field - 128 : field;   // 4-bit: value + 8 is the code
            }
            case IntPacking::kCtInt8: return static_cast<int8_t>(static_cast<const char*>(p_.codes->data)[r * p_.k + c]);
            case IntPacking::kNone: break;
        }
        return 0;
    }

    float scale(int64_t r, int64_t g) const {
        const bool transposed = q_.packing == IntPacking::kGptq || q_.packing == IntPacking::kAwq;  // [groups, n]
        return load_as_f32(p_.scales->data, p_.scales->dtype, transposed ? g * p_.n + r : r * groups_ + g);
    }

    // The 4-bit zero code (8 when the checkpoint stores none).
    int zero(int64_t r, int64_t g) const {
        if (p_.zeros == nullptr) return kQ4ZeroCode;
        switch (q_.packing) {
            case IntPacking::kGptq:
                return nibble(load_i32(*p_.zeros, g * (p_.n / 8) + r / 8), static_cast<int>(r % 8)) + (q_.zeros_minus_one ? 1 : 0);
            case IntPacking::kAwq: return nibble(load_i32(*p_.zeros, g * (p_.n / 8) + r / 8), kAwqNibble[r % 8]);
            case IntPacking::kCtPacked: return nibble(load_i32(*p_.zeros, (r / 8) * groups_ + g), static_cast<int>(r % 8));
            default: return kQ4ZeroCode;
        }
    }

    int64_t group(int64_t c) const {
        if (p_.g_idx != nullptr) return load_i32(*p_.g_idx, c);
        return q_.group_size > 0 ? c / q_.group_size : 0;
    }
    int64_t groups() const { return groups_; }

private:
    const PackedLinear& p_;
    const QuantConfig& q_;
    int64_t groups_, per_word_, words_per_row_;
};

std::string scale_name(const PackedLinear& p) { return p.module + "." + (p.scales ? p.scales->name.substr(p.scales->name.rfind('.') + 1) : "scales"); }

// Where one linear's repacked parts go in the arena.
struct Placement {
    int64_t codes = 0, scales = 0, zeros = -1, order = -1;   // byte offsets; -1: none
};

int64_t page(int64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

// The column order of a 4-bit weight: its columns sorted by group (stable), or empty when that is the
// order they have. Errors name the g_idx tensor.
Result<std::vector<int32_t>> column_order(const PackedLinear& p, const PackedReader& in) {
    std::vector<int64_t> group(static_cast<size_t>(p.k));
    for (int64_t c = 0; c < p.k; ++c) {
        group[c] = in.group(c);
        if (group[c] < 0 || group[c] >= in.groups()) {
            return invalid_argument("tensor '" + p.module + ".g_idx' (or weight_g_idx) puts column " + std::to_string(c) +
                                    " in group " + std::to_string(group[c]) + "; the weight has groups 0.." +
                                    std::to_string(in.groups() - 1));
        }
    }
    std::vector<int32_t> order(static_cast<size_t>(p.k));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return group[a] < group[b]; });
    for (int64_t c = 0; c < p.k; ++c) {
        if (group[order[c]] != group[order[c - c % kQ4Group]]) {
            return invalid_argument("linear '" + p.module + "': its scale groups (g_idx) do not fall in whole runs of " +
                                    std::to_string(kQ4Group) + " columns once sorted (column " + std::to_string(order[c]) +
                                    " of group " + std::to_string(group[order[c]]) + "); HiChat's 4-bit kernels scale "
                                    "groups of 32 columns");
        }
    }
    bool identity = true;
    for (int64_t c = 0; c < p.k && identity; ++c) identity = order[c] == c;
    if (identity) order.clear();
    return order;
}

// A scale as the kernels store it (f16 for 4-bit, f32 for int8), or an error naming the tensor.
Status check_scale(const PackedLinear& p, float s, bool f16) {
    if (std::isfinite(s) && (!f16 || std::fabs(s) <= kF16Max)) return ok_status();
    return invalid_argument("tensor '" + scale_name(p) + "' holds " + std::to_string(s) + "; scales must be finite" +
                            (f16 ? " and within f16's range (the 4-bit kernels' scales)" : ""));
}

Status repack_q4(const PackedLinear& p, const QuantConfig& q, uint8_t* codes_out, uint16_t* scales_out,
                 uint8_t* zeros_out, int32_t* order_out, bool* has_zeros, bool* has_order) {
    const PackedReader in(p, q);
    Result<std::vector<int32_t>> order = column_order(p, in);
    if (!order.ok()) return order.status();
    *has_order = !order->empty();
    if (*has_order) std::copy(order->begin(), order->end(), order_out);
    auto column = [&](int64_t c) -> int64_t { return *has_order ? (*order)[c] : c; };
    const int64_t k = p.k, groups = q4_groups(k), row_bytes = q4_row_bytes(k);
    std::vector<uint8_t> codes(static_cast<size_t>(q4_padded(k)));
    *has_zeros = false;
    for (int64_t r = 0; r < p.n; ++r) {
        std::fill(codes.begin(), codes.end(), uint8_t{kQ4ZeroCode});
        for (int64_t c = 0; c < k; ++c) codes[c] = static_cast<uint8_t>(in.code(r, column(c)));
        for (int64_t g = 0; g < groups; ++g) {
            float s = 0.0f;
            int z = kQ4ZeroCode;
            if (g * kQ4Group < k) {
                const int64_t source = in.group(column(g * kQ4Group));
                s = in.scale(r, source);
                z = in.zero(r, source);
                HICHAT_RETURN_IF_ERROR(check_scale(p, s, true));
            }
            scales_out[r * groups + g] = f32_to_f16(s);
            zeros_out[r * groups + g] = static_cast<uint8_t>(z);
            *has_zeros = *has_zeros || z != kQ4ZeroCode;
        }
        q4_pack_row(codes.data(), k, codes_out + r * row_bytes);
    }
    return ok_status();
}

Status repack_int8(const PackedLinear& p, const QuantConfig& q, int8_t* codes_out, float* scales_out) {
    const PackedReader in(p, q);
    for (int64_t r = 0; r < p.n; ++r) {
        scales_out[r] = in.scale(r, 0);
        HICHAT_RETURN_IF_ERROR(check_scale(p, scales_out[r], false));
        for (int64_t c = 0; c < p.k; ++c) codes_out[r * p.k + c] = static_cast<int8_t>(in.code(r, c));
    }
    return ok_status();
}

bool same_order(const WeightTensor& a, const WeightTensor& b) {
    const int32_t *x = a.scales.input_order, *y = b.scales.input_order;
    if (x == nullptr || y == nullptr) return x == y;
    return a.cols() == b.cols() && std::equal(x, x + a.cols(), y);
}

bool is_int(const WeightTensor& t) { return t.dtype == DType::kQ4 || t.dtype == DType::kI8; }

// Projections that multiply one input (q/k/v, gate/up) run as one fused product: all int of one
// type with one column order, or none int. The followers then share the first's order.
Status check_fused(const std::string& what, std::initializer_list<WeightTensor*> parts) {
    WeightTensor& first = **parts.begin();
    for (WeightTensor* t : parts) {
        if (is_int(*t) != is_int(first) || (is_int(first) && t->dtype != first.dtype)) {
            return invalid_argument(what + ": the projections that share an input must be quantized alike (HiChat runs "
                                    "them as one product); they mix " + std::string(dtype_name(first.dtype)) + " and " +
                                    std::string(dtype_name(t->dtype)) + " weights");
        }
        if (!same_order(*t, first)) {
            return invalid_argument(what + ": the projections that share an input have different activation orders "
                                    "(g_idx); HiChat quantizes their input once for all of them");
        }
        t->scales.input_order = first.scales.input_order;
    }
    return ok_status();
}

}  // namespace

Result<std::unique_ptr<IntWeights>> IntWeights::repack(const std::vector<PackedLinear>& linears, const QuantConfig& q,
                                                       ModelWeights& weights, int threads) {
    std::unique_ptr<IntWeights> out(new IntWeights());
    const bool q4 = q.bits == 4;
    std::vector<Placement> at(linears.size());
    int64_t total = 0;
    for (size_t i = 0; i < linears.size(); ++i) {
        const PackedLinear& p = linears[i];
        if (p.k > kIntegerKernelsMaxK) {
            return invalid_argument("linear '" + p.module + "' has " + std::to_string(p.k) + " inputs; the CPU's integer "
                                    "kernels take at most " + std::to_string(kIntegerKernelsMaxK));
        }
        at[i].codes = total;
        total += page(q4 ? p.n * q4_row_bytes(p.k) : p.n * p.k);
        at[i].scales = total;
        total += page(q4 ? p.n * q4_groups(p.k) * 2 : p.n * 4);
        if (q4) {
            at[i].zeros = total;
            total += page(p.n * q4_groups(p.k));
            at[i].order = total;
            total += page(p.k * 4);
        }
    }
    out->arena_ = HugePageBuffer(static_cast<size_t>(std::max<int64_t>(total, 1)));
    auto* base = static_cast<uint8_t*>(out->arena_.data());
    std::vector<Status> status(linears.size());
    std::vector<char> has_zeros(linears.size(), 0), has_order(linears.size(), 0);
    auto repack_one = [&](size_t i) {
        const Placement& a = at[i];
        if (!q4) {
            status[i] = repack_int8(linears[i], q, reinterpret_cast<int8_t*>(base + a.codes), reinterpret_cast<float*>(base + a.scales));
            return;
        }
        bool zeros = false, order = false;
        status[i] = repack_q4(linears[i], q, base + a.codes, reinterpret_cast<uint16_t*>(base + a.scales), base + a.zeros,
                              reinterpret_cast<int32_t*>(base + a.order), &zeros, &order);
        has_zeros[i] = zeros;
        has_order[i] = order;
    };
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < linears.size(); i = next++) repack_one(i);
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < std::min<int>(std::max(threads, 1), static_cast<int>(linears.size())); ++t) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
    for (const Status& s : status) HICHAT_RETURN_IF_ERROR(s);
    for (size_t i = 0; i < linears.size(); ++i) {
        const PackedLinear& p = linears[i];
        QuantScales s{.data = base + at[i].scales, .dtype = q4 ? DType::kF16 : DType::kF32, .block_rows = 1,
                      .block_cols = q4 ? kQ4Group : p.k};
        if (has_zeros[i]) s.zeros = base + at[i].zeros;
        if (has_order[i]) s.input_order = reinterpret_cast<const int32_t*>(base + at[i].order);
        *p.slot = WeightTensor{base + at[i].codes, q4 ? DType::kQ4 : DType::kI8, {p.n, p.k}, s};
    }
    for (size_t l = 0; l < weights.layers.size(); ++l) {
        LayerWeights& w = weights.layers[l];
        const std::string layer = "model.layers." + std::to_string(l);
        HICHAT_RETURN_IF_ERROR(check_fused(layer + ".self_attn (q_proj, k_proj, v_proj)", {&w.q_proj, &w.k_proj, &w.v_proj}));
        HICHAT_RETURN_IF_ERROR(check_fused(layer + ".mlp (gate_proj, up_proj)", {&w.gate_proj, &w.up_proj}));
    }
    out->num_repacked_ = static_cast<int64_t>(linears.size());
    return out;
}

}  // namespace hichat::model
