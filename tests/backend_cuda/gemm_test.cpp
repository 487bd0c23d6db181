// Gemm (cuBLASLt) against cpu::linear: bf16 and fp32 outputs, accumulate into fp32 (residual add),
// odd shapes, and pointers that are only 2-byte aligned.
#include <thread>
#include <type_traits>

#include "backend/cpu/ops.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/ops.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;
using bf16 = __nv_bfloat16;

struct GemmCase {
    int m, n, k;
};

class GemmTest : public CudaTest {};

void check_gemm(Gemm& gemm, const GemmCase& c, GemmOut out_type, bool accumulate, int offset_elems) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(::testing::Message() << "m " << c.m << " n " << c.n << " k " << c.k << " f32 "
                                      << (out_type == GemmOut::kF32) << " acc " << accumulate << " offset "
                                      << offset_elems << " seed " << seed);
    std::mt19937 rng(seed);
    const auto a_bits = to_bf16(random_floats(rng, size_t{1} * c.m * c.k));
    const auto w_bits = to_bf16(random_floats(rng, size_t{1} * c.n * c.k));
    const auto d0 = random_floats(rng, size_t{1} * c.m * c.n, -4.0f, 4.0f);
    std::vector<float> ref(d0.size());
    const auto a = from_bf16(a_bits);
    cpu::linear(a.data(), c.m, bf16_weight(w_bits, {c.n, c.k}), nullptr, ref.data(), pool());
    if (accumulate)
        for (size_t i = 0; i < ref.size(); ++i) ref[i] += d0[i];

    // The offset shifts every pointer by offset_elems elements inside a larger buffer.
    auto with_offset = [&](const auto& host) {
        using T = typename std::decay_t<decltype(host)>::value_type;
        std::vector<T> padded(host.size() + offset_elems);
        std::copy(host.begin(), host.end(), padded.begin() + offset_elems);
        return padded;
    };
    DeviceBuffer d_a = upload(with_offset(a_bits)), d_w = upload(with_offset(w_bits));
    const size_t out_bytes = (d0.size() + offset_elems) * (out_type == GemmOut::kF32 ? 4 : 2);
    DeviceBuffer d_d = accumulate ? upload(with_offset(d0)) : poisoned(out_bytes);
    const int out_size = out_type == GemmOut::kF32 ? 4 : 2;
    void* d_ptr = static_cast<char*>(d_d.data()) + size_t{1} * offset_elems * out_size;
    ASSERT_EQ(gemm.run(d_a.as<bf16>() + offset_elems, d_w.as<bf16>() + offset_elems, d_ptr, out_type, c.m, c.n, c.k,
                       accumulate, nullptr),
              cudaSuccess);
    std::vector<float> out;
    if (out_type == GemmOut::kF32) {
        const auto all = download<float>(d_d, d0.size() + offset_elems);
        out.assign(all.begin() + offset_elems, all.end());
    } else {
        const auto all = from_bf16(download<uint16_t>(d_d, d0.size() + offset_elems));
        out.assign(all.begin() + offset_elems, all.end());
    }
    EXPECT_EQ(count_nan(out), 0u);
    // fp32 accumulation on both sides: only summation order differs. bf16 output adds one rounding.
    EXPECT_LT(relative_error(out, ref), out_type == GemmOut::kF32 ? 1e-4 : 4e-3);
}

TEST_F(GemmTest, MatchesCpuLinear) {
    Gemm gemm;
    const GemmCase cases[] = {{1, 64, 64}, {7, 200, 1000}, {19, 896, 64}, {111, 1536, 2048}, {989, 512, 896}};
    for (const GemmCase& c : cases) {
        check_gemm(gemm, c, GemmOut::kBf16, false, 0);
        check_gemm(gemm, c, GemmOut::kF32, false, 0);
        check_gemm(gemm, c, GemmOut::kF32, true, 0);
    }
}

TEST_F(GemmTest, CachedPlansGiveTheSameAnswerTwice) {
    Gemm gemm;
    for (int round = 0; round < 2; ++round) {
        check_gemm(gemm, {19, 256, 512}, GemmOut::kF32, true, 0);
        check_gemm(gemm, {1, 256, 512}, GemmOut::kBf16, false, 0);
    }
}

TEST_F(GemmTest, OddShapesAndUnalignedPointers) {
    Gemm gemm;
    check_gemm(gemm, {7, 19, 32}, GemmOut::kF32, false, 1);
    check_gemm(gemm, {3, 40, 64}, GemmOut::kBf16, false, 3);
    check_gemm(gemm, {5, 24, 48}, GemmOut::kF32, true, 2);
}

// One-row products take cuda::gemv (m == 1, k % 8 == 0, aligned); the same shapes through cuBLASLt
// alone stay covered too, and the few-row ones always go there. 1 x 4500 x 14856 takes 2 warps per row
// and 29 loads per lane: a pass of 16, one of 8, one of 4, then a single load.
TEST_F(GemmTest, DecodeRowsMatchCpuThroughGemvAndCublas) {
    Gemm gemv_first, cublas_only(32 << 20, false);
    const GemmCase cases[] = {{1, 989, 4096},  {1, 6144, 2048}, {1, 111, 4104},   {1, 19, 14336},
                              {1, 7, 8},       {1, 1, 8},        {1, 3, 24},       {1, 5000, 4096},
                              {1, 4500, 7432}, {1, 4500, 14856}, {2, 6144, 512},   {8, 1000, 2048}};
    for (Gemm* gemm : {&gemv_first, &cublas_only}) {
        for (const GemmCase& c : cases) {
            check_gemm(*gemm, c, GemmOut::kBf16, false, 0);
            check_gemm(*gemm, c, GemmOut::kF32, false, 0);
            check_gemm(*gemm, c, GemmOut::kF32, true, 0);
        }
    }
    EXPECT_TRUE(gemv_applies(reinterpret_cast<void*>(256), reinterpret_cast<void*>(512), reinterpret_cast<void*>(64), 1, 4096));
    EXPECT_FALSE(gemv_applies(reinterpret_cast<void*>(256), reinterpret_cast<void*>(512), reinterpret_cast<void*>(64), 2, 4096));
    EXPECT_FALSE(gemv_applies(reinterpret_cast<void*>(258), reinterpret_cast<void*>(512), reinterpret_cast<void*>(64), 1, 4096));
    EXPECT_FALSE(gemv_applies(reinterpret_cast<void*>(256), reinterpret_cast<void*>(512), reinterpret_cast<void*>(64), 1, 4100));
}

// The fused SwiGLU against gemv to bf16 then silu_mul. The pair kernel may split k differently from
// the plain one (pair_splits), so g and u can differ in their last fp32 bits and, rarely, in their bf16
// rounding: nearly every output is bit-equal, and every one within two bf16 steps of the product, times
// (1 + |g|) where silu(g) = g sigmoid(g) is that sensitive to g.
TEST_F(GemmTest, GemvSiluMulMatchesGemvThenSiluMul) {
    for (const auto& [inter, k] : {std::pair{1, 8}, {7, 24}, {111, 2048}, {989, 4104}, {3584, 4096}, {8192, 2048}}) {
        const uint32_t seed = fresh_seed();
        SCOPED_TRACE(::testing::Message() << "intermediate " << inter << " k " << k << " seed " << seed);
        std::mt19937 rng(seed);
        const auto a = to_bf16(random_floats(rng, static_cast<size_t>(k)));
        const auto w = to_bf16(random_floats(rng, size_t{2} * inter * k));
        DeviceBuffer d_a = upload(a), d_w = upload(w), d_gate_up = poisoned(size_t{4} * inter),
                     d_ref = poisoned(size_t{2} * inter), d_out = poisoned(size_t{2} * inter);
        ASSERT_EQ(gemv(d_a.as<bf16>(), d_w.as<bf16>(), d_gate_up.data(), false, 1, 2 * inter, k, false, nullptr),
                  cudaSuccess);
        ASSERT_EQ(silu_mul(d_gate_up.as<bf16>(), 1, inter, d_ref.as<bf16>(), nullptr), cudaSuccess);
        ASSERT_EQ(gemv_silu_mul(d_a.as<bf16>(), d_w.as<bf16>(), d_out.as<bf16>(), inter, k, nullptr), cudaSuccess);
        const auto ref_bits = download<uint16_t>(d_ref, static_cast<size_t>(inter));
        const auto out_bits = download<uint16_t>(d_out, static_cast<size_t>(inter));
        const auto ref = from_bf16(ref_bits), out = from_bf16(out_bits);
        const auto gate_up = from_bf16(download<uint16_t>(d_gate_up, size_t{2} * inter));
        ASSERT_EQ(count_nan(ref), 0u);
        ASSERT_EQ(count_nan(out), 0u);
        size_t same = 0;
        for (size_t j = 0; j < ref.size(); ++j) {
            same += out_bits[j] == ref_bits[j];
            const float bound = std::fabs(ref[j]) * (2.0f / 128.0f) * (1.0f + std::fabs(gate_up[j])) + 1e-6f;
            EXPECT_LE(std::fabs(out[j] - ref[j]), bound) << "j " << j;
        }
        EXPECT_GE(same, ref.size() * 99 / 100) << "bit-equal outputs";
    }
}

TEST_F(GemmTest, RejectsBf16Accumulate) {
    Gemm gemm;
    EXPECT_EQ(gemm.run(nullptr, nullptr, nullptr, GemmOut::kBf16, 4, 4, 4, true, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(gemm.run(nullptr, nullptr, nullptr, GemmOut::kF32, 0, 4, 4, false, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace hichat::cuda
