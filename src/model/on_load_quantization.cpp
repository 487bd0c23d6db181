#include "model/on_load_quantization.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "base/check.h"
#include "base/dtype.h"

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

OnLoadQuantization::OnLoadQuantization(ModelWeights& weights, DType codes, int threads) {
    CHECK(codes == DType::kF8E4M3 || codes == DType::kI8) << dtype_name(codes);
    std::vector<WeightTensor*> linears;
    for (LayerWeights& l : weights.layers) {
        for (WeightTensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
            linears.push_back(t);
        }
    }
    // One arena: tensor i's codes at code_at[i], its scales at scale_at[i], each on its own page.
    auto page = [](int64_t bytes) { return (bytes + 4095) / 4096 * 4096; };
    std::vector<int64_t> code_at, scale_at;
    int64_t total = 0;
    for (const WeightTensor* t : linears) {
        code_at.push_back(total);
        total += page(t->num_elements());
        scale_at.push_back(total);
        total += page(t->rows() * static_cast<int64_t>(sizeof(float)));
    }
    arena_ = HugePageBuffer(static_cast<size_t>(total));
    auto* base = static_cast<uint8_t*>(arena_.data());
    auto codes_of = [&](size_t i) { return base + code_at[i]; };
    auto scales_of = [&](size_t i) { return reinterpret_cast<float*>(base + scale_at[i]); };
    auto quantize = [&](size_t i) {
        if (codes == DType::kI8) {
            quantize_rows_int8(*linears[i], reinterpret_cast<int8_t*>(codes_of(i)), scales_of(i));
        } else {
            quantize_rows_fp8(*linears[i], codes_of(i), scales_of(i));
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
        WeightTensor& t = *linears[i];
        QuantScales s{.data = scales_of(i), .dtype = DType::kF32, .block_rows = 1, .block_cols = t.cols()};
        t = WeightTensor{codes_of(i), codes, t.shape, s};
    }
    num_quantized_ = static_cast<int64_t>(linears.size());
}

QuantConfig OnLoadQuantization::config(DType codes) {
    QuantConfig q;
    q.method = QuantMethod::kOnLoad;
    q.weight_dtype = codes;
    q.weight_scale = WeightScaleKind::kChannel;
    q.activations = ActivationQuant::kDynamicToken;
    return q;
}

}  // namespace hichat::model
