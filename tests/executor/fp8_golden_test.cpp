// FP8 copies of the golden fixtures in every layout HiChat reads (tests/model/fp8_checkpoint_writer):
// the CPU dequantizes FP8 weights on load, so an FP8 checkpoint's logits must equal those of the bf16
// checkpoint holding the dequantized weights exactly; CUDA (which skips visibly without a device) runs
// FP8 kernels and is compared with that CPU run. Against transformers' bf16 logits of the unquantized
// weights, the relative error and top-1 agreement (the quantization error) are printed and bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "base/dtype.h"
#include "common/fixtures.h"
#include "score_logits.h"
#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"
#include "model/fp8_checkpoint_writer.h"

namespace hichat::executor {
namespace {

using model::testing::Fp8Layout;
using testing::fixture_dir;

std::unique_ptr<model::Checkpoint> open_ok(const std::string& dir) {
    auto ckpt = model::Checkpoint::open(dir);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status().message();
    return ckpt.ok() ? std::move(ckpt).value() : nullptr;
}

using testing::score;

// The CUDA runner of these tests: small pool, steps of at most max_tokens tokens.
RunnerOptions cuda_options(int max_tokens) {
    return {.device = DeviceKind::kCuda, .gpu_memory_fraction = 0.05, .max_num_seqs = 8,
            .max_num_tokens_per_step = max_tokens, .max_context_tokens = 512};
}

class Fp8GoldenTest : public ::testing::TestWithParam<std::tuple<std::string, Fp8Layout>> {
protected:
    void SetUp() override {
        const auto& [fixture, layout] = GetParam();
        const model::testing::Fp8Checkpoint q =
            model::testing::quantize_fp8(model::testing::read_checkpoint(fixture_dir(fixture)), layout);
        q.write_fp8(fp8_dir_.path());
        q.dequantized.write(ref_dir_.path());
        fp8_ = open_ok(fp8_dir_.path());
        ref_ = open_ok(ref_dir_.path());
        ASSERT_TRUE(fp8_ && ref_);
        const nlohmann::json golden = testing::read_golden(fixture);
        ids_ = golden["ids_300"].get<std::vector<int32_t>>();
        transformers_ = testing::read_floats(fixture_dir(fixture) + "/logits_300.bin");
    }

    std::vector<float> cpu_reference() const {   // the CPU on the dequantized checkpoint
        CpuRunner runner(*ref_, {.num_threads = 2, .num_kv_blocks = 32});
        return score(runner, ids_);
    }

    std::string name() const {
        return std::get<0>(GetParam()) + "/" + model::testing::fp8_layout_name(std::get<1>(GetParam()));
    }

    model::testing::TempDir fp8_dir_, ref_dir_;
    std::unique_ptr<model::Checkpoint> fp8_, ref_;
    std::vector<int32_t> ids_;
    std::vector<float> transformers_;
};

TEST_P(Fp8GoldenTest, CpuLogitsEqualTheDequantizedCheckpoint) {
    CpuRunner fp8_runner(*fp8_, {.num_threads = 2, .num_kv_blocks = 32});
    const std::vector<float> got = score(fp8_runner, ids_), want = cpu_reference();
    ASSERT_EQ(got.size(), transformers_.size());
    EXPECT_EQ(got, want) << name();
    const size_t vocab = static_cast<size_t>(fp8_->config().vocab_size);
    const double err = testing::relative_error(got, transformers_);
    const double top1 = testing::top1_agreement(got, transformers_, vocab);
    std::printf("[cpu fp8] %s: vs transformers bf16 relative error %.3e, top-1 agreement %.4f\n", name().c_str(), err,
                top1);
    // E4M3 keeps 3 mantissa bits: 3.6% RMS per weight, 11-18% on these logits of 2-layer random models
    // with small margins (a wrong scale or block grid gives errors near 1).
    EXPECT_LT(err, 0.25) << name();
    EXPECT_GT(top1, 0.6) << name();
}

// CUDA keeps per-tensor and per-channel FP8 weights in FP8 where the FP8 kernels take their shape: a
// prefill's linear layers quantize their input per token (FP8 GEMM), a step of up to 8 tokens reads
// bf16 activations (FP8 GEMV); block-scaled ones, and shapes the kernels refuse (k % 64 for the GEMV,
// no cuBLASLt algorithm), run dequantized. The prefill of all but the last token, then the last token alone, against the CPU on
// the dequantized weights (which does not quantize activations).
TEST_P(Fp8GoldenTest, CudaLogitsMatchTheDequantizedCheckpointOnCpu) {
    if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    auto runner = make_runner(*fp8_, cuda_options(512));
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    const std::vector<float> want = cpu_reference();
    const size_t vocab = static_cast<size_t>(fp8_->config().vocab_size), n = ids_.size();
    const auto table = identity_block_table(static_cast<int>(n), (*runner)->kv_block_size_tokens());
    ForwardBatch batch;
    const std::vector<int32_t> prompt(ids_.begin(), ids_.end() - 1);
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = prompt, .all_logits = true});
    std::vector<float> prefill, decode;
    (*runner)->forward(batch, prefill);
    batch.seqs[0].pos0 = static_cast<int32_t>(n - 1);
    batch.seqs[0].tokens = std::span<const int32_t>(&ids_.back(), 1);
    batch.seqs[0].all_logits = false;
    (*runner)->forward(batch, decode);
    const std::vector<float> want_prefill(want.begin(), want.end() - static_cast<std::ptrdiff_t>(vocab));
    const std::vector<float> want_decode(want.end() - static_cast<std::ptrdiff_t>(vocab), want.end());
    const double prefill_err = testing::relative_error(prefill, want_prefill);
    const double decode_err = testing::relative_error(decode, want_decode);
    const double top1 = testing::top1_agreement(prefill, want_prefill, vocab);
    std::printf("[cuda fp8] %s: vs CPU on the dequantized weights: prefill relative error %.3e, top-1 %.4f; "
                "one-token step %.3e; prefill vs transformers bf16 %.3e\n",
                name().c_str(), prefill_err, top1, decode_err,
                testing::relative_error(prefill, std::vector<float>(transformers_.begin(),
                                                                    transformers_.end() - static_cast<std::ptrdiff_t>(vocab))));
    // FP8 activations (3 mantissa bits) in the prefill's GEMMs; the one-token step reads bf16 ones but
    // attends over the prefill's keys and values, and is one row (0.27-0.40 for mistral on the H200,
    // 2026-12-03, against 0.19 for its prefill's 298 rows).
    EXPECT_LT(prefill_err, 0.25) << name();
    EXPECT_GT(top1, 0.6) << name();
    EXPECT_LT(decode_err, 0.5) << name();
}

// Steps of at most 8 tokens: every FP8 linear runs the FP8 GEMV (bf16 activations, weight-only), so
// CUDA computes what the CPU computes on the dequantized weights up to rounding (the CPU rounds each
// dequantized weight to bf16; the GEMV multiplies the E4M3 value and applies the row's scale in fp32).
TEST_P(Fp8GoldenTest, CudaSmallStepsMatchTheDequantizedCheckpointOnCpu) {
    if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    auto runner = make_runner(*fp8_, cuda_options(8));
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    const std::vector<float> want = cpu_reference();
    const auto table = identity_block_table(static_cast<int>(ids_.size()), (*runner)->kv_block_size_tokens());
    std::vector<float> got;
    for (size_t pos = 0; pos < ids_.size(); pos += 8) {   // 8, then the rest: 299 = 37 x 8 + 3
        const size_t len = std::min<size_t>(8, ids_.size() - pos);
        ForwardBatch batch;
        batch.seqs.push_back({.block_table = table, .pos0 = static_cast<int32_t>(pos),
                              .tokens = std::span<const int32_t>(ids_.data() + pos, len), .all_logits = true});
        std::vector<float> logits;
        (*runner)->forward(batch, logits);
        got.insert(got.end(), logits.begin(), logits.end());
    }
    ASSERT_EQ(got.size(), want.size());
    const size_t vocab = static_cast<size_t>(fp8_->config().vocab_size);
    const double err = testing::relative_error(got, want);
    const double top1 = testing::top1_agreement(got, want, vocab);
    std::printf("[cuda fp8 gemv] %s: steps of 8 vs CPU on the dequantized weights: relative error %.3e, top-1 %.4f\n",
                name().c_str(), err, top1);
    // The bf16 CUDA path against the CPU on these fixtures: 0.9-2.2e-2 (CudaGoldenTest).
    EXPECT_LT(err, 0.05) << name();
    EXPECT_GT(top1, 0.9) << name();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp8GoldenTest,
                         ::testing::Combine(::testing::ValuesIn(testing::fixture_names()),
                                            ::testing::ValuesIn(model::testing::all_fp8_layouts())),
                         [](const auto& info) {
                             return std::get<0>(info.param) + "_" +
                                    model::testing::fp8_layout_name(std::get<1>(info.param));
                         });

// --quantization fp8: a bf16 fixture quantized on load is the compressed-tensors FP8_DYNAMIC checkpoint
// of the same weights (per-channel amax / 448 scales, per-token activations), so its logits equal
// that checkpoint's exactly, on the CPU and on CUDA.
class Fp8OnLoadTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const model::testing::Fp8Checkpoint q = model::testing::quantize_fp8(
            model::testing::read_checkpoint(fixture_dir(GetParam())), Fp8Layout::kCtChannelDynamic);
        q.write_fp8(written_dir_.path());
        written_ = open_ok(written_dir_.path());
        auto on_load = model::Checkpoint::open(fixture_dir(GetParam()), {.quantization = model::LoadQuantization::kFp8,
                                                                         .threads = 2});
        ASSERT_TRUE(on_load.ok()) << on_load.status().message();
        on_load_ = std::move(on_load).value();
        ASSERT_TRUE(written_);
        ids_ = testing::read_golden(GetParam())["ids_300"].get<std::vector<int32_t>>();
    }

    model::testing::TempDir written_dir_;
    std::unique_ptr<model::Checkpoint> written_, on_load_;
    std::vector<int32_t> ids_;
};

TEST_P(Fp8OnLoadTest, WeightsAreTheChannelDynamicCheckpoints) {
    EXPECT_EQ(on_load_->config().quant.describe(),
              "--quantization (on load): FP8, per-channel weight scales, dynamic per-token activations");
    const auto& a = on_load_->weights().layers;
    const auto& b = written_->weights().layers;
    ASSERT_EQ(a.size(), b.size());
    for (size_t l = 0; l < a.size(); ++l) {
        const model::WeightTensor* mine[] = {&a[l].q_proj, &a[l].k_proj, &a[l].v_proj, &a[l].o_proj, &a[l].gate_proj, &a[l].up_proj, &a[l].down_proj};
        const model::WeightTensor* theirs[] = {&b[l].q_proj, &b[l].k_proj, &b[l].v_proj, &b[l].o_proj, &b[l].gate_proj, &b[l].up_proj, &b[l].down_proj};
        for (int i = 0; i < 7; ++i) {
            SCOPED_TRACE(::testing::Message() << "layer " << l << " linear " << i);
            ASSERT_EQ(mine[i]->dtype, DType::kF8E4M3);
            ASSERT_EQ(mine[i]->shape, theirs[i]->shape);
            ASSERT_EQ(mine[i]->scales.block_rows, 1);
            ASSERT_EQ(mine[i]->scales.block_cols, mine[i]->cols());
            const auto* x = static_cast<const uint8_t*>(mine[i]->data);
            const auto* y = static_cast<const uint8_t*>(theirs[i]->data);
            EXPECT_TRUE(std::equal(x, x + mine[i]->num_elements(), y)) << "codes differ";
            for (int64_t r = 0; r < mine[i]->rows(); ++r) {
                ASSERT_EQ(load_as_f32(mine[i]->scales.data, mine[i]->scales.dtype, r),
                          load_as_f32(theirs[i]->scales.data, theirs[i]->scales.dtype, r)) << "row " << r;
            }
        }
    }
}

TEST_P(Fp8OnLoadTest, LogitsEqualTheChannelDynamicCheckpointsOnCpu) {
    CpuRunner a(*on_load_, {.num_threads = 2, .num_kv_blocks = 32});
    CpuRunner b(*written_, {.num_threads = 2, .num_kv_blocks = 32});
    EXPECT_EQ(score(a, ids_), score(b, ids_));
}

TEST_P(Fp8OnLoadTest, LogitsEqualTheChannelDynamicCheckpointsOnCuda) {
    if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    auto a = make_runner(*on_load_, cuda_options(512));
    auto b = make_runner(*written_, cuda_options(512));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(score(**a, ids_), score(**b, ids_));
}

TEST(Fp8OnLoad, AQuantizedCheckpointOrAnUnknownValueIsRefused) {
    const model::testing::Fp8Checkpoint q = model::testing::quantize_fp8(
        model::testing::read_checkpoint(fixture_dir("llama3")), Fp8Layout::kCtTensorStatic);
    model::testing::TempDir dir;
    q.write_fp8(dir.path());
    auto ckpt = model::Checkpoint::open(dir.path(), {.quantization = model::LoadQuantization::kFp8});
    ASSERT_FALSE(ckpt.ok());
    EXPECT_NE(ckpt.status().message().find("--quantization fp8 needs a bf16, f16 or f32 checkpoint; this one is already "
                                           "quantized (compressed-tensors FP8"),
              std::string::npos)
        << ckpt.status().message();
    EXPECT_NE(ckpt.status().message().find(dir.path() + "/config.json"), std::string::npos);
    auto bad = model::parse_load_quantization("int4");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message(), "--quantization must be none, fp8, int8 or q4, not 'int4'");
    EXPECT_EQ(*model::parse_load_quantization("fp8"), model::LoadQuantization::kFp8);
    EXPECT_EQ(*model::parse_load_quantization("none"), model::LoadQuantization::kNone);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp8OnLoadTest, ::testing::ValuesIn(testing::fixture_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hichat::executor
