// Shared helpers of the CPU op tests: random data, weights stored in each dtype, error measures, and a
// fixture parameter that forces each SIMD level the machine supports.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "base/dtype.h"
#include "model/weights.h"

namespace hichat::cpu::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
}

// A weight tensor stored in `dtype`, plus the exact float values it holds (the reference's input).
struct StoredWeights {
    std::vector<uint16_t> half;   // [num_elements] bf16/f16 bits
    std::vector<float> full;      // [num_elements] f32 storage
    std::vector<double> values;   // [num_elements] what the stored elements decode to
    model::WeightTensor tensor;
};

inline StoredWeights store_weights(const std::vector<float>& src, DType dtype, std::vector<int64_t> shape) {
    StoredWeights s;
    s.values.resize(src.size());
    if (dtype == DType::kF32) {
        s.full = src;
        for (size_t i = 0; i < src.size(); ++i) s.values[i] = src[i];
        s.tensor.data = s.full.data();
    } else {
        s.half.resize(src.size());
        for (size_t i = 0; i < src.size(); ++i) {
            s.half[i] = dtype == DType::kBF16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
            s.values[i] = dtype == DType::kBF16 ? bf16_to_f32(s.half[i]) : f16_to_f32(s.half[i]);
        }
        s.tensor.data = s.half.data();
    }
    s.tensor.dtype = dtype;
    s.tensor.shape = std::move(shape);
    return s;
}

// ||got - want|| / ||want|| over all elements.
inline double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
        double d = static_cast<double>(got[i]) - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Every level: a test of a level this CPU lacks skips itself, saying so (ForcedLevelTest).
inline std::vector<SimdLevel> all_levels() {
    return {SimdLevel::kPortable, SimdLevel::kAvx2, SimdLevel::kAvx512, SimdLevel::kAvx512Bf16};
}

inline std::string level_test_name(const ::testing::TestParamInfo<SimdLevel>& info) {
    return std::string(simd_level_name(info.param));
}

// Runs each test of a suite at one forced SIMD level; restores the detected level afterwards.
class ForcedLevelTest : public ::testing::TestWithParam<SimdLevel> {
protected:
    void SetUp() override {
        if (GetParam() > detected_simd_level()) {
            GTEST_SKIP() << "SKIPPED: this CPU (or build) lacks " << simd_level_name(GetParam()) << "; its best is "
                         << simd_level_name(detected_simd_level());
        }
        ASSERT_EQ(force_simd_level(GetParam()), GetParam());
    }
    void TearDown() override { force_simd_level(detected_simd_level()); }
};

}  // namespace hichat::cpu::testing
