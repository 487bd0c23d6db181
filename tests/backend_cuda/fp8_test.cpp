// The FP8 (E4M3) ops against the CPU computing on the same quantized values: per-token activation
// quantization (codes and scales exactly as base/dtype's conversion gives them), the FP8-weight GEMV
// (bf16 activations, a scale per weight row), and cuBLASLt's FP8 GEMM with a scale per activation row
// and per weight row; awkward sizes; shapes the kernels cannot take are refused.
#include <cuda_runtime_api.h>

#include "backend/cuda/gemm.h"
#include "backend/cuda/ops.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;
using bf16 = __nv_bfloat16;

class Fp8Test : public CudaTest {};

// Random finite E4M3 codes (0x7f and 0xff are NaN).
std::vector<uint8_t> random_codes(std::mt19937& rng, size_t n) {
    std::vector<uint8_t> v(n);
    for (uint8_t& c : v) {
        do c = static_cast<uint8_t>(rng() & 0xffu); while ((c & 0x7fu) == 0x7fu);
    }
    return v;
}

std::vector<float> random_scales(std::mt19937& rng, size_t n) {
    std::vector<float> v = random_floats(rng, n, 0.001f, 0.01f);
    return v;
}

TEST_F(Fp8Test, QuantizeRowsMatchesTheCpuConversion) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    for (auto [rows, k] : {std::pair{1, 16}, {5, 80}, {64, 4096}, {3, 14336}}) {
        std::vector<float> x = random_floats(rng, size_t{1} * rows * k, -3.0f, 3.0f);
        for (int c = 0; c < k; ++c) x[c] = 0.0f;                               // row 0: zeros
        if (rows > 1) x[size_t{1} * k + 7] = 1000.0f;                          // one outlier
        const std::vector<uint16_t> bits = to_bf16(x);
        DeviceBuffer d_x = upload(bits), d_q = poisoned(size_t{1} * rows * k), d_s = poisoned(size_t{4} * rows);
        ASSERT_EQ(quantize_fp8_rows(d_x.as<bf16>(), rows, k, d_q.as<uint8_t>(), d_s.as<float>(), nullptr), cudaSuccess);
        const auto q = download<uint8_t>(d_q, size_t{1} * rows * k);
        const auto s = download<float>(d_s, rows);
        for (int r = 0; r < rows; ++r) {
            float amax = 0.0f;
            for (int c = 0; c < k; ++c) amax = std::max(amax, std::fabs(bf16_to_f32(bits[size_t{1} * r * k + c])));
            const float want = std::max(amax / 448.0f, 1.0f / (448.0f * 512.0f));
            ASSERT_EQ(s[r], want) << "row " << r << " k " << k;
            for (int c = 0; c < k; ++c) {
                const size_t i = size_t{1} * r * k + c;
                ASSERT_EQ(q[i], f32_to_fp8_e4m3(bf16_to_f32(bits[i]) / want)) << "row " << r << " col " << c << " k " << k;
            }
        }
    }
}

TEST_F(Fp8Test, GemvMatchesCpuOnTheQuantizedWeights) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    for (auto [n, k] : {std::pair{1, 16}, {33, 48}, {300, 2064}, {4096, 4096}, {1024, 14336}, {96, 128}}) {
        const auto a_bits = to_bf16(random_floats(rng, k));
        const auto w = random_codes(rng, size_t{1} * n * k);
        const auto scale = random_scales(rng, n);
        const auto d0 = random_floats(rng, n, -4.0f, 4.0f);
        std::vector<float> ref(n);
        for (int j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int c = 0; c < k; ++c) acc += double{fp8_e4m3_to_f32(w[size_t{1} * j * k + c])} * bf16_to_f32(a_bits[c]);
            ref[j] = static_cast<float>(acc * scale[j]);
        }
        DeviceBuffer d_a = upload(a_bits), d_w = upload(w), d_s = upload(scale);
        for (int variant = 0; variant < 3; ++variant) {   // fp32, fp32 accumulated, bf16
            SCOPED_TRACE(::testing::Message() << "n " << n << " k " << k << " variant " << variant);
            const bool f32 = variant < 2, acc = variant == 1;
            DeviceBuffer d_d = acc ? upload(d0) : poisoned(size_t{1} * n * (f32 ? 4 : 2));
            ASSERT_EQ(fp8_gemv(d_a.as<bf16>(), d_w.as<uint8_t>(), d_s.as<float>(), d_d.data(), f32, 1, n, k, acc, nullptr),
                      cudaSuccess);
            std::vector<float> out = f32 ? download<float>(d_d, n) : from_bf16(download<uint16_t>(d_d, n));
            std::vector<float> want = ref;
            if (acc) for (int j = 0; j < n; ++j) want[j] += d0[j];
            EXPECT_EQ(count_nan(out), 0u);
            EXPECT_LT(relative_error(out, want), f32 ? 1e-5 : 4e-3);
        }
    }
}

TEST_F(Fp8Test, GemmMatchesCpuOnTheQuantizedValues) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    Gemm gemm;
    int refused = 0;
    struct Case { int m, n, k; };
    for (const Case c : {Case{1, 16, 16}, Case{3, 48, 80}, Case{17, 1024, 1024}, Case{128, 96, 4096}, Case{257, 512, 272}}) {
        const auto a = random_codes(rng, size_t{1} * c.m * c.k), w = random_codes(rng, size_t{1} * c.n * c.k);
        const auto a_scale = random_scales(rng, c.m), w_scale = random_scales(rng, c.n);
        const auto d0 = random_floats(rng, size_t{1} * c.m * c.n, -4.0f, 4.0f);
        std::vector<float> ref(size_t{1} * c.m * c.n);
        for (int i = 0; i < c.m; ++i) {
            for (int j = 0; j < c.n; ++j) {
                double acc = 0.0;
                for (int t = 0; t < c.k; ++t) {
                    acc += double{fp8_e4m3_to_f32(a[size_t{1} * i * c.k + t])} * fp8_e4m3_to_f32(w[size_t{1} * j * c.k + t]);
                }
                ref[size_t{1} * i * c.n + j] = static_cast<float>(acc * a_scale[i] * w_scale[j]);
            }
        }
        DeviceBuffer d_a = upload(a), d_w = upload(w), d_as = upload(a_scale), d_ws = upload(w_scale);
        if (!gemm.fp8_supported(c.m, c.n, c.k)) {   // then run_fp8 refuses it, and the runner dequantizes
            DeviceBuffer d_d = poisoned(size_t{1} * c.m * c.n * 2);
            EXPECT_EQ(gemm.run_fp8(d_a.as<uint8_t>(), d_as.as<float>(), d_w.as<uint8_t>(), d_ws.as<float>(), d_d.data(),
                                   GemmOut::kBf16, c.m, c.n, c.k, false, nullptr),
                      cudaErrorNotSupported);
            ++refused;
            continue;
        }
        for (int variant = 0; variant < 2; ++variant) {   // bf16, fp32 accumulated
            SCOPED_TRACE(::testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k << " variant " << variant);
            const bool acc = variant == 1;
            const size_t count = size_t{1} * c.m * c.n;
            DeviceBuffer d_d = acc ? upload(d0) : poisoned(count * 2);
            ASSERT_EQ(gemm.run_fp8(d_a.as<uint8_t>(), d_as.as<float>(), d_w.as<uint8_t>(), d_ws.as<float>(), d_d.data(),
                                   acc ? GemmOut::kF32 : GemmOut::kBf16, c.m, c.n, c.k, acc, nullptr),
                      cudaSuccess);
            std::vector<float> out = acc ? download<float>(d_d, count) : from_bf16(download<uint16_t>(d_d, count));
            std::vector<float> want = ref;
            if (acc) for (size_t i = 0; i < count; ++i) want[i] += d0[i];
            EXPECT_EQ(count_nan(out), 0u);
            // Fast accumulation keeps fewer bits than fp32 (~2e-3 at k = 4096 on random data).
            EXPECT_LT(relative_error(out, want), 1e-2);
        }
    }
    // cuBLASLt 13.1 on the H200 has no FP8 algorithm with outer-vector scales: every case is refused.
    if (refused == 5) GTEST_SKIP() << "SKIPPED: cuBLASLt has no FP8 outer-vector-scale algorithm on this GPU (refused as such)";
}

TEST_F(Fp8Test, ShapesTheKernelsCannotTakeAreRefused) {
    Gemm gemm;
    DeviceBuffer a(64 * 64), w(64 * 64), s(64 * 4), d(64 * 64 * 4);
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>(), s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4, 32,
                           24, false, nullptr),
              cudaErrorNotSupported);   // k % 16
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>(), s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4, 40,
                           32, false, nullptr),
              cudaErrorNotSupported);   // n % 16
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>() + 1, s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4,
                           32, 32, false, nullptr),
              cudaErrorNotSupported);   // alignment
    EXPECT_FALSE(fp8_gemv_applies(a.data(), w.data(), d.data(), 1, 24));
    EXPECT_EQ(fp8_gemv(a.as<bf16>(), w.as<uint8_t>(), s.as<float>(), d.data(), true, 1, 8, 24, false, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(quantize_fp8_rows(a.as<bf16>(), 2, 24, w.as<uint8_t>(), s.as<float>(), nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda
