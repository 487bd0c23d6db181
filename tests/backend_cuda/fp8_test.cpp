// The FP8 (E4M3) ops against the CPU computing on the same quantized values: per-token activation
// quantization (codes and scales exactly as base/dtype's conversion gives them), the FP8-weight GEMV
// (1-8 tokens of bf16 activations, a scale per weight row; subnormal and extreme codes, activations
// far apart in size), the FP8 GEMM (cuBLASLt's unit-scale bf16 product in chunks, then a scale per
// activation row and per weight row), and silu_mul_fp8 against the unfused kernels it replaces;
// awkward sizes; shapes the kernels cannot take are refused.
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
    struct Case { int m, n, k; };
    for (const Case c : {Case{1, 1, 64}, Case{3, 33, 128}, Case{8, 300, 2112}, Case{1, 4096, 4096}, Case{5, 1024, 14336},
                         Case{2, 96, 192}, Case{7, 17, 640}, Case{1, 6144, 4096}}) {
        std::vector<float> a = random_floats(rng, size_t{1} * c.m * c.k);
        if (c.m > 1) {   // token 1: a large and a tiny range (the kernel scales activations by 2^100)
            for (int i = 0; i < c.k; ++i) a[size_t{1} * c.k + i] *= i % 2 == 0 ? 5000.0f : 1e-30f;
        }
        const auto a_bits = to_bf16(a);
        auto w = random_codes(rng, size_t{1} * c.n * c.k);
        for (int i = 0; i < c.k; ++i) {   // row 0: subnormal codes only (and zeros); row 1: +-448 and the smallest normals
            const uint8_t subnormal[] = {0x01, 0x81, 0x07, 0x87, 0x00, 0x80, 0x03, 0x85};
            const uint8_t extreme[] = {0x7e, 0xfe, 0x08, 0x88, 0x7e};
            w[i] = subnormal[i % 8];
            if (c.n > 1) w[size_t{1} * c.k + i] = extreme[i % 5];
        }
        const auto scale = random_scales(rng, c.n);
        const auto d0 = random_floats(rng, size_t{1} * c.m * c.n, -4.0f, 4.0f);
        std::vector<float> ref(size_t{1} * c.m * c.n), ref_abs(ref.size());   // ref_abs: the sum of |terms|
        for (int r = 0; r < c.m; ++r) {
            for (int j = 0; j < c.n; ++j) {
                double acc = 0.0, abs_acc = 0.0;
                for (int i = 0; i < c.k; ++i) {
                    const double term =
                        double{fp8_e4m3_to_f32(w[size_t{1} * j * c.k + i])} * bf16_to_f32(a_bits[size_t{1} * r * c.k + i]);
                    acc += term;
                    abs_acc += std::fabs(term);
                }
                ref[size_t{1} * r * c.n + j] = static_cast<float>(acc * scale[j]);
                ref_abs[size_t{1} * r * c.n + j] = static_cast<float>(abs_acc * scale[j]);
            }
        }
        DeviceBuffer d_a = upload(a_bits), d_w = upload(w), d_s = upload(scale);
        const size_t count = size_t{1} * c.m * c.n;
        for (int variant = 0; variant < 3; ++variant) {   // fp32, fp32 accumulated, bf16
            SCOPED_TRACE(::testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k << " variant " << variant);
            const bool f32 = variant < 2, acc = variant == 1;
            DeviceBuffer d_d = acc ? upload(d0) : poisoned(count * (f32 ? 4 : 2));
            ASSERT_EQ(fp8_gemv(d_a.as<bf16>(), d_w.as<uint8_t>(), d_s.as<float>(), d_d.data(), f32, c.m, c.n, c.k, acc,
                               nullptr),
                      cudaSuccess);
            std::vector<float> out = f32 ? download<float>(d_d, count) : from_bf16(download<uint16_t>(d_d, count));
            std::vector<float> want = ref;
            if (acc) for (size_t i = 0; i < count; ++i) want[i] += d0[i];
            EXPECT_EQ(count_nan(out), 0u);
            for (int r = 0; r < c.m; ++r) {   // each token on its own: token 1 is 10^4 times the others
                const auto row = [&](const std::vector<float>& v) {
                    return std::vector<float>(v.begin() + size_t{1} * r * c.n, v.begin() + size_t{1} * (r + 1) * c.n);
                };
                EXPECT_LT(relative_error(row(out), row(want)), f32 ? 1e-5 : 4e-3) << "token " << r;
            }
            if (f32 && !acc) {   // every split count gives the same within fp32 rounding
                for (int splits : {1, 2, 4, 8}) {
                    DeviceBuffer d_s2 = poisoned(count * 4);
                    ASSERT_EQ(fp8_gemv(d_a.as<bf16>(), d_w.as<uint8_t>(), d_s.as<float>(), d_s2.data(), true, c.m, c.n,
                                       c.k, false, nullptr, splits),
                              cudaSuccess);
                    // fp32 sums in another order: 2-4e-6 apart at k up to 14336 (H200).
                    EXPECT_LT(relative_error(download<float>(d_s2, count), out), 2e-5) << "splits " << splits;
                }
            }
            if (f32 && !acc) {   // rows 0 and 1 (subnormal, extreme codes) within fp32 rounding of their terms
                for (int r = 0; r < c.m; ++r) {
                    for (int j = 0; j < std::min(c.n, 2); ++j) {
                        const size_t i = size_t{1} * r * c.n + j;
                        EXPECT_NEAR(out[i], want[i], 1e-5 * ref_abs[i]) << "row " << j << " token " << r;
                    }
                }
            }
        }
    }
}

TEST_F(Fp8Test, GemvSiluMulMatchesTheGemvThenSiluMul) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    struct Case { int m, inter, k; };
    for (const Case c : {Case{1, 16, 64}, Case{3, 40, 192}, Case{8, 1000, 1024}, Case{1, 2048, 4096}, Case{2, 7, 128}}) {
        SCOPED_TRACE(::testing::Message() << "m " << c.m << " inter " << c.inter << " k " << c.k);
        const auto a_bits = to_bf16(random_floats(rng, size_t{1} * c.m * c.k));
        const auto w = random_codes(rng, size_t{2} * c.inter * c.k);
        const auto scale = random_scales(rng, size_t{2} * c.inter);
        DeviceBuffer d_a = upload(a_bits), d_w = upload(w), d_s = upload(scale);
        const size_t count = size_t{1} * c.m * c.inter;
        DeviceBuffer d_out = poisoned(count * 2), d_gu = poisoned(count * 4), d_ref = poisoned(count * 2);
        ASSERT_EQ(fp8_gemv_silu_mul(d_a.as<bf16>(), d_w.as<uint8_t>(), d_s.as<float>(), d_out.as<bf16>(), c.m, c.inter,
                                    c.k, nullptr),
                  cudaSuccess);
        // The same from the plain FP8 GEMV to bf16 and silu_mul (equal but for the k split, which may
        // differ: a bf16 rounding apart at most).
        ASSERT_EQ(fp8_gemv(d_a.as<bf16>(), d_w.as<uint8_t>(), d_s.as<float>(), d_gu.data(), false, c.m, 2 * c.inter, c.k,
                           false, nullptr),
                  cudaSuccess);
        // fp8_gemv's rows are [gate | up] per token; silu_mul wants each token's [gate | up] row: the same.
        ASSERT_EQ(silu_mul(d_gu.as<bf16>(), c.m, c.inter, d_ref.as<bf16>(), nullptr), cudaSuccess);
        const auto got = download<uint16_t>(d_out, count);
        EXPECT_LT(relative_error(from_bf16(got), from_bf16(download<uint16_t>(d_ref, count))), 4e-3);
        // And against the CPU on the quantized weights.
        std::vector<float> ref(count);
        for (int r = 0; r < c.m; ++r) {
            for (int j = 0; j < c.inter; ++j) {
                double gate = 0.0, up = 0.0;
                for (int i = 0; i < c.k; ++i) {
                    const double x = bf16_to_f32(a_bits[size_t{1} * r * c.k + i]);
                    gate += x * fp8_e4m3_to_f32(w[size_t{1} * j * c.k + i]);
                    up += x * fp8_e4m3_to_f32(w[(size_t{1} * c.inter + j) * c.k + i]);
                }
                gate *= scale[j];
                up *= scale[c.inter + j];
                ref[size_t{1} * r * c.inter + j] = static_cast<float>(gate / (1.0 + std::exp(-gate)) * up);
            }
        }
        EXPECT_LT(relative_error(from_bf16(got), ref), 1e-2);
    }
}

TEST_F(Fp8Test, GemmMatchesCpuOnTheQuantizedValues) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    Gemm gemm;
    int refused = 0;
    const int scratch_rows = 64;   // m = 128 and 257 run in chunks
    DeviceBuffer scratch(size_t{2} * scratch_rows * 1024);
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
                                   GemmOut::kBf16, c.m, c.n, c.k, false, scratch.as<bf16>(), scratch_rows, nullptr),
                      cudaErrorNotSupported);
            ++refused;
            continue;
        }
        // run_fp8 bf16, fp32 accumulated (cuBLASLt's scale vectors where it has them); then the unit-scale
        // product and scale_fp8_product, which run_fp8 falls back to, bf16 and fp32 accumulated.
        for (int variant = 0; variant < 4; ++variant) {
            SCOPED_TRACE(::testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k << " variant " << variant);
            const bool acc = variant % 2 == 1;
            const GemmOut out_type = acc ? GemmOut::kF32 : GemmOut::kBf16;
            const size_t count = size_t{1} * c.m * c.n;
            DeviceBuffer d_d = acc ? upload(d0) : poisoned(count * 2);
            if (variant < 2) {
                ASSERT_EQ(gemm.run_fp8(d_a.as<uint8_t>(), d_as.as<float>(), d_w.as<uint8_t>(), d_ws.as<float>(), d_d.data(),
                                       out_type, c.m, c.n, c.k, acc, scratch.as<bf16>(), scratch_rows, nullptr),
                          cudaSuccess);
            } else {
                DeviceBuffer product = poisoned(count * 2);
                ASSERT_EQ(gemm.run_fp8_unit(d_a.as<uint8_t>(), d_w.as<uint8_t>(), product.as<bf16>(), c.m, c.n, c.k, nullptr),
                          cudaSuccess);
                ASSERT_EQ(scale_fp8_product(product.as<bf16>(), d_as.as<float>(), d_ws.as<float>(), d_d.data(), acc, acc,
                                            c.m, c.n, nullptr),
                          cudaSuccess);
            }
            std::vector<float> out = acc ? download<float>(d_d, count) : from_bf16(download<uint16_t>(d_d, count));
            std::vector<float> want = ref;
            if (acc) for (size_t i = 0; i < count; ++i) want[i] += d0[i];
            EXPECT_EQ(count_nan(out), 0u);
            // Fast accumulation keeps fewer bits than fp32 (~2e-3 at k = 4096 on random data); the
            // unit-scale product is rounded to bf16 (2^-9) before the scales.
            EXPECT_LT(relative_error(out, want), 1e-2);
        }
    }
    if (refused == 5) GTEST_SKIP() << "SKIPPED: cuBLASLt has no FP8 algorithm on this GPU (refused as such)";
}

// silu_mul_fp8 on an FP8 gate_up's unit-scale product gives, code for code and scale for scale, what
// scale_fp8_product to bf16, silu_mul and quantize_fp8_rows give; silu_mul with the scales gives
// the middle step's bf16 bit for bit; without scales, silu_mul_fp8 is silu_mul and quantize_fp8_rows.
// And against the CPU: the dequantized codes within E4M3's rounding of the SwiGLU of the scaled product.
// Widths in and at and past the row cache's limit (24064 values).
TEST_F(Fp8Test, SiluMulFp8EqualsTheUnfusedKernels) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    for (auto [t, inter] : {std::pair{1, 16}, {3, 48}, {9, 1008}, {17, 14336}, {2, 2064}, {2, 24064}, {2, 24592}}) {
        SCOPED_TRACE(::testing::Message() << "t " << t << " inter " << inter);
        const size_t count = size_t{1} * t * inter;
        const auto product = to_bf16(random_floats(rng, 2 * count, -3000.0f, 3000.0f));
        const auto a_scale = random_floats(rng, t, 1e-3f, 1e-2f);
        const auto w_scale = random_scales(rng, size_t{2} * inter);
        DeviceBuffer d_p = upload(product), d_as = upload(a_scale), d_ws = upload(w_scale);
        for (const bool scaled : {true, false}) {
            const float* as = scaled ? d_as.as<float>() : nullptr;
            const float* ws = scaled ? d_ws.as<float>() : nullptr;
            DeviceBuffer d_gu = poisoned(4 * count), d_act = poisoned(2 * count), d_act2 = poisoned(2 * count);
            DeviceBuffer d_q = poisoned(count), d_s = poisoned(4 * t), d_fq = poisoned(count), d_fs = upload(a_scale);
            if (scaled) {
                ASSERT_EQ(scale_fp8_product(d_p.as<bf16>(), as, ws, d_gu.data(), false, false, t, 2 * inter, nullptr),
                          cudaSuccess);
            }
            ASSERT_EQ(silu_mul(scaled ? d_gu.as<bf16>() : d_p.as<bf16>(), t, inter, d_act.as<bf16>(), nullptr), cudaSuccess);
            ASSERT_EQ(quantize_fp8_rows(d_act.as<bf16>(), t, inter, d_q.as<uint8_t>(), d_s.as<float>(), nullptr), cudaSuccess);
            ASSERT_EQ(silu_mul(d_p.as<bf16>(), t, inter, d_act2.as<bf16>(), nullptr, as, ws), cudaSuccess);
            // The row scales written over the input's (the engine's act_scale): each row reads its own first.
            ASSERT_EQ(silu_mul_fp8(d_p.as<bf16>(), scaled ? d_fs.as<float>() : nullptr, ws, t, inter, d_fq.as<uint8_t>(),
                                   d_fs.as<float>(), nullptr),
                      cudaSuccess);
            EXPECT_EQ(download<uint16_t>(d_act2, count), download<uint16_t>(d_act, count)) << "scaled " << scaled;
            const auto q = download<uint8_t>(d_fq, count);
            const auto s = download<float>(d_fs, t);
            EXPECT_EQ(q, download<uint8_t>(d_q, count)) << "scaled " << scaled;
            EXPECT_EQ(s, download<float>(d_s, t)) << "scaled " << scaled;
            // The CPU: SwiGLU of the scaled product, against the codes times their row scale.
            std::vector<float> want(count), got(count);
            for (int r = 0; r < t; ++r) {
                for (int j = 0; j < inter; ++j) {
                    const size_t g = size_t{2} * r * inter + j, u = g + inter;
                    const double gs = scaled ? double{a_scale[r]} * w_scale[j] : 1.0;
                    const double us = scaled ? double{a_scale[r]} * w_scale[inter + j] : 1.0;
                    const double gate = bf16_to_f32(product[g]) * gs, up = bf16_to_f32(product[u]) * us;
                    want[size_t{1} * r * inter + j] = static_cast<float>(gate / (1.0 + std::exp(-gate)) * up);
                    got[size_t{1} * r * inter + j] = fp8_e4m3_to_f32(q[size_t{1} * r * inter + j]) * s[r];
                }
            }
            EXPECT_EQ(count_nan(got), 0u);
            EXPECT_LT(relative_error(got, want), 5e-2);   // E4M3 keeps 3 mantissa bits
        }
    }
}

// rms_norm_fp8 gives, code for code and scale for scale, what rms_norm then quantize_fp8_rows give,
// at widths in and past rms_norm's registers (4096 floats per row) and at and past the row cache's limit (24064 values).
TEST_F(Fp8Test, RmsNormFp8EqualsRmsNormThenQuantize) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    for (auto [rows, dim] : {std::pair{1, 16}, {7, 2048}, {300, 4096}, {5, 5120}, {3, 8192}, {2, 24064}, {2, 24592}}) {
        SCOPED_TRACE(::testing::Message() << "rows " << rows << " dim " << dim);
        std::vector<float> x = random_floats(rng, size_t{1} * rows * dim, -4.0f, 4.0f);
        if (rows > 1) x[size_t{1} * dim + 3] = 900.0f;   // one outlier
        const auto w = to_bf16(random_floats(rng, dim, 0.2f, 2.0f));
        const size_t count = size_t{1} * rows * dim;
        DeviceBuffer d_x = upload(x), d_w = upload(w), d_h = poisoned(2 * count), d_q = poisoned(count);
        DeviceBuffer d_s = poisoned(4 * rows), d_fq = poisoned(count), d_fs = poisoned(4 * rows);
        ASSERT_EQ(rms_norm(d_x.as<float>(), rows, dim, d_w.as<bf16>(), 1e-5f, d_h.as<bf16>(), nullptr), cudaSuccess);
        ASSERT_EQ(quantize_fp8_rows(d_h.as<bf16>(), rows, dim, d_q.as<uint8_t>(), d_s.as<float>(), nullptr), cudaSuccess);
        ASSERT_EQ(rms_norm_fp8(d_x.as<float>(), rows, dim, d_w.as<bf16>(), 1e-5f, d_fq.as<uint8_t>(), d_fs.as<float>(),
                               nullptr),
                  cudaSuccess);
        EXPECT_EQ(download<uint8_t>(d_fq, count), download<uint8_t>(d_q, count));
        EXPECT_EQ(download<float>(d_fs, rows), download<float>(d_s, rows));
    }
}

TEST_F(Fp8Test, ShapesTheKernelsCannotTakeAreRefused) {
    Gemm gemm;
    DeviceBuffer a(64 * 64), w(64 * 64), s(64 * 4), d(64 * 64 * 4), p(64 * 64 * 4);
    bf16* scratch = p.as<bf16>();
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>(), s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4, 32,
                           24, false, scratch, 16, nullptr),
              cudaErrorNotSupported);   // k % 16
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>(), s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4, 40,
                           32, false, scratch, 16, nullptr),
              cudaErrorNotSupported);   // n % 16
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>() + 1, s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4,
                           32, 32, false, scratch, 16, nullptr),
              cudaErrorNotSupported);   // alignment
    EXPECT_EQ(gemm.run_fp8(a.as<uint8_t>(), s.as<float>(), w.as<uint8_t>(), s.as<float>(), d.data(), GemmOut::kBf16, 4,
                           32, 32, false, nullptr, 16, nullptr),
              cudaErrorInvalidValue);   // no scratch
    EXPECT_FALSE(fp8_gemv_applies(a.data(), w.data(), d.data(), 1, 48));    // k % 64
    EXPECT_FALSE(fp8_gemv_applies(a.data(), w.data(), d.data(), 9, 64));    // more than 8 tokens
    EXPECT_FALSE(fp8_gemv_applies(a.data(), w.data(), d.data(), 0, 64));
    EXPECT_TRUE(fp8_gemv_applies(a.data(), w.data(), d.data(), 8, 64));
    EXPECT_EQ(fp8_gemv(a.as<bf16>(), w.as<uint8_t>(), s.as<float>(), d.data(), true, 1, 8, 48, false, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(fp8_gemv(a.as<bf16>(), w.as<uint8_t>(), s.as<float>(), d.data(), true, 1, 8, 64, false, nullptr, 3),
              cudaErrorInvalidValue);   // splits
    EXPECT_EQ(fp8_gemv_silu_mul(a.as<bf16>(), w.as<uint8_t>(), s.as<float>(), d.as<bf16>(), 9, 8, 64, nullptr),
              cudaErrorInvalidValue);   // more than 8 tokens
    EXPECT_EQ(scale_fp8_product(p.as<bf16>(), s.as<float>(), s.as<float>(), d.data(), true, false, 2, 30, nullptr),
              cudaErrorInvalidValue);   // n % 4
    EXPECT_EQ(gemm.run_fp8_unit(a.as<uint8_t>(), w.as<uint8_t>(), p.as<bf16>(), 4, 40, 32, nullptr),
              cudaErrorNotSupported);   // n % 16
    EXPECT_EQ(silu_mul_fp8(p.as<bf16>(), s.as<float>(), s.as<float>(), 2, 24, w.as<uint8_t>(), s.as<float>(), nullptr),
              cudaErrorInvalidValue);   // intermediate % 16, as quantize_fp8_rows and the FP8 GEMM's k
    EXPECT_EQ(silu_mul_fp8(p.as<bf16>(), s.as<float>(), nullptr, 2, 16, w.as<uint8_t>(), s.as<float>(), nullptr),
              cudaErrorInvalidValue);   // one scale without the other
    EXPECT_EQ(silu_mul_fp8(p.as<bf16>() + 1, nullptr, nullptr, 2, 16, w.as<uint8_t>(), s.as<float>(), nullptr),
              cudaErrorInvalidValue);   // alignment
    EXPECT_EQ(silu_mul(p.as<bf16>(), 2, 16, d.as<bf16>(), nullptr, s.as<float>(), nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(rms_norm_fp8(p.as<float>(), 2, 30, a.as<bf16>(), 1e-5f, w.as<uint8_t>(), s.as<float>(), nullptr),
              cudaErrorInvalidValue);   // dim % 4
    EXPECT_EQ(quantize_fp8_rows(a.as<bf16>(), 2, 24, w.as<uint8_t>(), s.as<float>(), nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda
