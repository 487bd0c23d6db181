// The CPU runner with a bf16 / f16 KV cache (--kv-cache-dtype bf16 / f16) against its fp32 cache on the
// golden fixtures: the logits of a prefill (attention reads the rows the step just wrote) and of
// one-token steps, their top-1 tokens, the greedy continuation, and the distance to transformers.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/fixtures.h"
#include "executor/cpu_runner.h"
#include "model/checkpoint.h"
#include "sampling/sampler.h"

namespace hichat::executor {
namespace {

using testing::fixture_dir;

constexpr int kPrefillTokens = 200;   // of the 300 golden ids; the other 100 go one step each

// Every row's logits: a prefill of the first kPrefillTokens ids, then one step per id.
std::vector<float> prefill_then_steps(CpuRunner& runner, const std::vector<int32_t>& ids) {
    const auto table = identity_block_table(static_cast<int>(ids.size()), runner.kv_block_size_tokens());
    std::vector<float> all, logits;
    ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0,
                          .tokens = std::span<const int32_t>(ids.data(), kPrefillTokens), .all_logits = true});
    runner.forward(batch, logits);
    all = logits;
    for (size_t pos = kPrefillTokens; pos < ids.size(); ++pos) {
        batch.seqs[0].pos0 = static_cast<int32_t>(pos);
        batch.seqs[0].tokens = std::span<const int32_t>(&ids[pos], 1);
        batch.seqs[0].all_logits = false;
        runner.forward(batch, logits);
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

class CpuKvDtypeTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto ckpt = model::Checkpoint::open(fixture_dir(GetParam()));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        golden_ = testing::read_golden(GetParam());
    }

    std::vector<float> logits(DType kv_dtype) const {
        CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32, .kv_dtype = kv_dtype});
        return prefill_then_steps(runner, golden_["ids_300"].get<std::vector<int32_t>>());
    }

    std::vector<int32_t> greedy(DType kv_dtype) const {
        const auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
        const size_t num_new = golden_["greedy"].size();
        CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32, .kv_dtype = kv_dtype});
        const auto table = identity_block_table(static_cast<int>(prompt.size() + num_new), runner.kv_block_size_tokens());
        std::vector<int32_t> generated;
        std::vector<float> out;
        ForwardBatch batch;
        batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = prompt, .all_logits = false});
        while (generated.size() < num_new) {
            runner.forward(batch, out);
            generated.push_back(sampling::argmax(out));
            batch.seqs[0].pos0 = static_cast<int32_t>(prompt.size() + generated.size() - 1);
            batch.seqs[0].tokens = std::span<const int32_t>(&generated.back(), 1);
        }
        return generated;
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    nlohmann::json golden_;
};

TEST_P(CpuKvDtypeTest, LogitsStayCloseToTheFp32Cache) {
    const std::vector<float> f32 = logits(DType::kF32);
    const std::vector<float> transformers = testing::read_floats(fixture_dir(GetParam()) + "/logits_300.bin");
    const size_t vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    ASSERT_EQ(f32.size(), transformers.size());
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        const std::vector<float> got = logits(dtype);
        const double err = testing::relative_error(got, f32);
        const double top1 = testing::top1_agreement(got, f32, vocab);
        std::printf("[cpu %s kv] %s: vs fp32 KV relative error %.3e, top-1 %.4f; vs transformers %.3e (fp32 KV %.3e)\n",
                    std::string(dtype_name(dtype)).c_str(), GetParam().c_str(), err, top1,
                    testing::relative_error(got, transformers), testing::relative_error(f32, transformers));
        // One rounding per K/V element: relative 2^-9 (bf16) or 2^-12 (f16) at most, ~0.58 of that RMS;
        // these 2-layer random models carry it to the logits 3-8x amplified. Measured (x86-64, avx512_bf16,
        // 2026-12-04): bf16 3.3e-3 (qwen3) .. 8.9e-3 (mistral), top-1 >= 0.983; f16 4.0e-4 .. 1.13e-3,
        // top-1 >= 0.993: f16 ~8x below bf16, as its mantissa is. A wrong row, dtype or layout gives
        // errors near 1. (Both are over the transformers bound of 1e-3 the fp32 cache meets at ~1e-5,
        // which is why --kv-cache-dtype auto stays fp32 on the CPU.)
        const bool bf16 = dtype == DType::kBF16;
        EXPECT_LT(err, bf16 ? 1.5e-2 : 2e-3) << dtype_name(dtype);
        EXPECT_GE(top1, bf16 ? 0.97 : 0.99) << dtype_name(dtype);
    }
}

TEST_P(CpuKvDtypeTest, GreedyContinuationMatchesTheFp32Cache) {
    const std::vector<int32_t> f32 = greedy(DType::kF32);
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        const std::vector<int32_t> got = greedy(dtype);
        size_t same = 0;
        while (same < got.size() && got[same] == f32[same]) ++same;
        std::printf("[cpu %s kv] %s: greedy agrees with fp32 KV for %zu of %zu tokens\n",
                    std::string(dtype_name(dtype)).c_str(), GetParam().c_str(), same, got.size());
        // Measured: f16 agrees on all 40 tokens of every family; bf16 on all but mistral (36: the flat
        // logits of a random model let one near-tie flip, and the continuations part there).
        EXPECT_GE(same, dtype == DType::kF16 ? got.size() : size_t{32}) << dtype_name(dtype);
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuKvDtypeTest, ::testing::ValuesIn(testing::fixture_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hichat::executor
