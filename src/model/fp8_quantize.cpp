#include "model/fp8_quantize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "base/check.h"
#include "base/dtype.h"

namespace hichat::model {

namespace {
constexpr float kFp8Max = 448.0f;
}  // namespace

void quantize_rows_fp8(const WeightTensor& t, uint8_t* q, float* scale) {
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
        const float s = amax > 0.0f ? amax / kFp8Max : 1.0f;   // a zero row: codes 0, any scale
        scale[r] = s;
        for (int64_t c = 0; c < k; ++c) q[r * k + c] = f32_to_fp8_e4m3(std::clamp(row[c] / s, -kFp8Max, kFp8Max));
    }
}

Fp8Quantization::Fp8Quantization(ModelWeights& weights, int threads) {
    std::vector<WeightTensor*> linears;
    for (LayerWeights& l : weights.layers) {
        for (WeightTensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
            linears.push_back(t);
        }
    }
    codes_.resize(linears.size());
    scales_.resize(linears.size());
    for (size_t i = 0; i < linears.size(); ++i) {
        codes_[i] = std::make_unique<uint8_t[]>(static_cast<size_t>(linears[i]->num_elements()));
        scales_[i] = std::make_unique<float[]>(static_cast<size_t>(linears[i]->rows()));
    }
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < linears.size(); i = next++) quantize_rows_fp8(*linears[i], codes_[i].get(), scales_[i].get());
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < std::max(threads, 1); ++i) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
    for (size_t i = 0; i < linears.size(); ++i) {
        WeightTensor& t = *linears[i];
        Fp8Scales s{.data = scales_[i].get(), .dtype = DType::kF32, .block_rows = 1, .block_cols = t.cols()};
        t = WeightTensor{codes_[i].get(), DType::kF8E4M3, t.shape, s};
    }
}

QuantConfig Fp8Quantization::config() {
    QuantConfig q;
    q.method = QuantMethod::kOnLoad;
    q.weight_scale = WeightScaleKind::kChannel;
    q.activations = ActivationQuant::kDynamicToken;
    return q;
}

}  // namespace hichat::model
