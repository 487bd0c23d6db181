// The FP8 (E4M3) KV cache on the golden fixtures (bf16 weights): CUDA with --kv-cache-dtype fp8 against
// the CPU (fp32 KV) and against CUDA's own bf16-KV run, through a prefill (the prefill kernel reads the
// cache it just wrote) and one-token steps (the decode kernel); and the pool holds twice the blocks of
// bf16 in the same memory. Skips visibly without a device.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/fixtures.h"
#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"

namespace hichat::executor {
namespace {

using testing::fixture_dir;

constexpr int kPrefillTokens = 200;   // of the 300 golden ids; the other 100 go one step each

RunnerOptions cuda_options(KvCacheDtype dtype) {
    return {.device = DeviceKind::kCuda, .gpu_memory_fraction = 0.05, .max_num_seqs = 8, .max_num_tokens_per_step = 512,
            .max_context_tokens = 512, .kv_cache_dtype = dtype};
}

// Every row's logits: a prefill of the first kPrefillTokens ids, then one step per id.
std::vector<float> prefill_then_steps(ModelRunner& runner, const std::vector<int32_t>& ids) {
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

class Fp8KvGoldenTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
        auto ckpt = model::Checkpoint::open(fixture_dir(GetParam()));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        ids_ = testing::read_golden(GetParam())["ids_300"].get<std::vector<int32_t>>();
    }

    std::vector<float> run_cuda(KvCacheDtype dtype) const {
        auto runner = make_runner(*checkpoint_, cuda_options(dtype));
        EXPECT_TRUE(runner.ok()) << runner.status().message();
        return runner.ok() ? prefill_then_steps(**runner, ids_) : std::vector<float>{};
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    std::vector<int32_t> ids_;
};

TEST_P(Fp8KvGoldenTest, LogitsMatchTheCpuAndTheBf16Cache) {
    CpuRunner cpu(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32, .kv_dtype = DType::kF32});
    const std::vector<float> want = prefill_then_steps(cpu, ids_);
    const std::vector<float> bf16 = run_cuda(KvCacheDtype::kBf16), fp8 = run_cuda(KvCacheDtype::kFp8);
    ASSERT_EQ(fp8.size(), want.size());
    ASSERT_EQ(bf16.size(), want.size());
    const size_t vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    const size_t split = static_cast<size_t>(kPrefillTokens) * vocab;
    auto part = [&](const std::vector<float>& v, bool steps) {
        return steps ? std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(split), v.end())
                     : std::vector<float>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(split));
    };
    for (bool steps : {false, true}) {
        const char* what = steps ? "one-token steps" : "prefill";
        const double err = testing::relative_error(part(fp8, steps), part(want, steps));
        const double top1 = testing::top1_agreement(part(fp8, steps), part(want, steps), vocab);
        const double bf16_err = testing::relative_error(part(bf16, steps), part(want, steps));
        const double vs_bf16 = testing::relative_error(part(fp8, steps), part(bf16, steps));
        std::printf("[cuda fp8 kv] %s %s: vs CPU relative error %.3e, top-1 %.4f (bf16 KV vs CPU %.3e); "
                    "vs bf16 KV %.3e\n",
                    GetParam().c_str(), what, err, top1, bf16_err, vs_bf16);
        // E4M3 keeps 3 mantissa bits per key and value element, fewer for the small ones (scale 1.0:
        // these checkpoints have no calibrated KV scales), and these 2-layer random models have flat
        // logits. H200, 2026-12-03: 4.8e-2 (qwen3) .. 1.57e-1 (mistral), top-1 0.765-0.95, where bf16
        // KV is 0.9-2.2e-2; a wrong scale or layout gives errors near 1.
        EXPECT_LT(err, 0.25) << GetParam() << " " << what;
        EXPECT_GT(top1, 0.7) << GetParam() << " " << what;
    }
}

// The pool's budget is the same share of free memory; with one byte per element it takes twice the blocks.
TEST_P(Fp8KvGoldenTest, ThePoolHoldsTwiceTheBlocks) {
    auto blocks = [&](KvCacheDtype dtype) {
        RunnerOptions o = cuda_options(dtype);
        o.gpu_memory_fraction = 0.0005;    // the budget binds before max_num_seqs full contexts do
        o.max_num_seqs = 1024;
        o.max_num_tokens_per_step = 64;
        auto runner = make_runner(*checkpoint_, o);
        EXPECT_TRUE(runner.ok()) << runner.status().message();
        return runner.ok() ? (*runner)->num_kv_blocks() : 0;
    };
    const int bf16 = blocks(KvCacheDtype::kBf16), fp8 = blocks(KvCacheDtype::kFp8);
    std::printf("[cuda fp8 kv] %s: %d blocks bf16, %d blocks fp8\n", GetParam().c_str(), bf16, fp8);
    ASSERT_GT(bf16, 0);
    const double ratio = static_cast<double>(fp8) / bf16;
    EXPECT_GT(ratio, 1.9) << bf16 << " vs " << fp8;
    EXPECT_LT(ratio, 2.1) << bf16 << " vs " << fp8;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Fp8KvGoldenTest, ::testing::ValuesIn(testing::fixture_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hichat::executor
