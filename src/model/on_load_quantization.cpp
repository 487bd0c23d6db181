#include "model/on_load_quantization.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <utility>

#include "base/check.h"
#include "base/dtype.h"
#include "base/q4_layout.h"

namespace hichat::model {

namespace {

// Quantizes each row of `t` with scale = amax / max_code (a zero row: codes 0, scale 1) and writes
// code(w / scale) for each element.
template <class Code, class Encode>
void quantize_rows(const WeightTensor& t, float max_code, Code* q, float* scale, Encode encode) {
    CHECK(t.shape.size() == 2 && (t.dtype == DType::kBF16 || t.dtype == DType::kF16 || t.dtype == DType::kF32))
        << dtype_name(t.dtype);
    const int64_t n = t.rows(), k = t.cols();
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = 0; r < n; ++r) {
        float amax = 0.0f;
        for (int64_t c = 0; c < k; ++c) {
            row[c] = load_as_f32(t.data, t.dtype, r * k + c);
            amax = std::max(amax, std::fabs(row[c]));
        }
        const float s = amax > 0.0f ? amax / max_code : 1.0f;
        scale[r] = s;
        for (int64_t c = 0; c < k; ++c) q[r * k + c] = encode(std::clamp(row[c] / s, -max_code, max_code));
    }
}

}  // namespace

void quantize_rows_fp8(const WeightTensor& t, uint8_t* q, float* scale) {
    quantize_rows(t, kFp8E4M3Max, q, scale, [](float v) { return f32_to_fp8_e4m3(v); });
}

void quantize_rows_int8(const WeightTensor& t, int8_t* q, float* scale) {
    // Half away from zero, as std::lround, in double (exact for |v| <= 127) so that it vectorizes.
    quantize_rows(t, 127.0f, q, scale, [](float v) {
        const double d = v;
        return static_cast<int8_t>(std::trunc(d + std::copysign(0.5, d)));
    });
}

void quantize_rows_q4(const WeightTensor& t, uint8_t* q, uint16_t* scale) {
    CHECK(t.shape.size() == 2 && (t.dtype == DType::kBF16 || t.dtype == DType::kF16 || t.dtype == DType::kF32))
        << dtype_name(t.dtype);
    const int64_t n = t.rows(), k = t.cols(), groups = q4_groups(k), row_bytes = q4_row_bytes(k);
    std::vector<uint8_t> codes(static_cast<size_t>(q4_padded(k)));
    for (int64_t r = 0; r < n; ++r) {
        std::fill(codes.begin(), codes.end(), uint8_t{kQ4ZeroCode});
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t begin = std::min(k, g * kQ4Group), end = std::min(k, begin + kQ4Group);
            float extreme = 0.0f;  // the element of largest magnitude, with its sign
            for (int64_t c = begin; c < end; ++c) {
                const float w = load_as_f32(t.data, t.dtype, r * k + c);
                if (std::fabs(w) > std::fabs(extreme)) extreme = w;
            }
            const uint16_t s = f32_to_f16(extreme / -8.0f);
            scale[r * groups + g] = s;
            const double d = f16_to_f32(s);
            if (d == 0.0) continue;  // codes 8
            for (int64_t c = begin; c < end; ++c) {
                const double v = std::clamp(load_as_f32(t.data, t.dtype, r * k + c) / d, -8.0, 7.0);
                codes[c] = static_cast<uint8_t>(std::trunc(v + std::copysign(0.5, v)) + kQ4ZeroCode);
            }
        }
        q4_pack_row(codes.data(), k, q + r * row_bytes);
    }
}

OnLoadQuantization::OnLoadQuantization(ModelWeights& weights, DType codes, int threads) {
    CHECK(codes == DType::kF8E4M3 || codes == DType::kI8 || codes == DType::kQ4) << dtype_name(codes);
    // (tensor, codes) jobs. int8 and 4-bit (the CPU) take the lm_head too, in int8 (it would otherwise
    // be 0.3-0.45 of the bytes a decode step reads; 4 bits would move the logits most where they are
    // read). A tied embedding table stays as stored (its rows are read one per token).
    std::vector<std::pair<WeightTensor*, DType>> linears;
    if (codes != DType::kF8E4M3) linears.emplace_back(&weights.lm_head, DType::kI8);
    for (LayerWeights& l : weights.layers) {
        for (WeightTensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
            linears.emplace_back(t, codes);
        }
    }
    // One arena: tensor i's codes at code_at[i], its scales at scale_at[i], each on its own page.
    auto page = [](int64_t bytes) { return (bytes + 4095) / 4096 * 4096; };
    std::vector<int64_t> code_at, scale_at;
    int64_t total = 0;
    for (const auto& [t, type] : linears) {
        const bool q4 = type == DType::kQ4;
        code_at.push_back(total);
        total += page(q4 ? t->rows() * q4_row_bytes(t->cols()) : t->num_elements());
        scale_at.push_back(total);
        total += page(q4 ? t->rows() * q4_groups(t->cols()) * 2 : t->rows() * static_cast<int64_t>(sizeof(float)));
    }
    arena_ = HugePageBuffer(static_cast<size_t>(total));
    auto* base = static_cast<uint8_t*>(arena_.data());
    auto codes_of = [&](size_t i) { return base + code_at[i]; };
    auto scales_of = [&](size_t i) { return base + scale_at[i]; };
    auto quantize = [&](size_t i) {
        const WeightTensor& t = *linears[i].first;
        switch (linears[i].second) {
            case DType::kI8:
                return quantize_rows_int8(t, reinterpret_cast<int8_t*>(codes_of(i)), reinterpret_cast<float*>(scales_of(i)));
            case DType::kQ4: return quantize_rows_q4(t, codes_of(i), reinterpret_cast<uint16_t*>(scales_of(i)));
            default: return quantize_rows_fp8(t, codes_of(i), reinterpret_cast<float*>(scales_of(i)));
        }
    };
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < linears.size(); i = next++) quantize(i);
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < std::max(threads, 1); ++i) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
    for (size_t i = 0; i < linears.size(); ++i) {
        WeightTensor& t = *linears[i].first;
        const bool q4 = linears[i].second == DType::kQ4;
        QuantScales s{.data = scales_of(i), .dtype = q4 ? DType::kF16 : DType::kF32, .block_rows = 1,
                      .block_cols = q4 ? kQ4Group : t.cols()};
        t = WeightTensor{codes_of(i), linears[i].second, t.shape, s};
    }
    num_quantized_ = static_cast<int64_t>(linears.size());
}

QuantConfig OnLoadQuantization::config(DType codes) {
    QuantConfig q;
    q.method = QuantMethod::kOnLoad;
    q.weight_dtype = codes;
    q.weight_scale = codes == DType::kQ4 ? WeightScaleKind::kBlock : WeightScaleKind::kChannel;
    if (codes == DType::kQ4) {
        q.block_rows = 1;
        q.block_cols = static_cast<int>(kQ4Group);
    }
    q.activations = ActivationQuant::kDynamicToken;
    return q;
}

}  // namespace hichat::model
