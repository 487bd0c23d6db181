// Streamed layers (issue 21): a CUDA run whose last layers' weights are copied over PCIe each step
// computes what the all-GPU run computes, at every split point of every golden family: the same
// logits (same kernels on the same values: equal to float rounding of nothing, checked at 1e-6) and
// the same greedy tokens through pipelined, graphed decode steps. Skips visibly without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/fixtures.h"
#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"

namespace hichat::executor {
namespace {

using testing::fixture_dir;

RunnerOptions cuda_options(int gpu_layers) {
    return {.device = DeviceKind::kCuda,
            .gpu_memory_fraction = 0.05,
            .max_num_seqs = 4,
            .max_num_tokens_per_step = 512,
            .max_context_tokens = 512,
            .gpu_layers = gpu_layers,
            .offload = gpu_layers < 0 ? OffloadMode::kAuto : OffloadMode::kStream};
}

struct RunOutput {
    std::vector<float> logits;               // every row of a 40-token prompt
    std::vector<std::vector<int32_t>> ids;   // greedy tokens of two prompts decoded together
};

// forward() of ids_40 with every row's logits, then two prompts prefilled and decoded 20 steps
// through forward_argmax (the pipelined path: eager, captured, then replayed decode graphs).
RunOutput run(ModelRunner& runner, const std::vector<int32_t>& ids) {
    RunOutput out;
    const int bs = runner.kv_block_size_tokens();
    const auto table = identity_block_table(40, bs);
    ForwardBatch first;
    first.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = {ids.data(), 40}, .all_logits = true});
    runner.forward(first, out.logits);

    const std::vector<std::vector<int32_t>> prompts{{ids.begin(), ids.begin() + 30}, {ids.begin() + 50, ids.begin() + 57}};
    std::vector<std::vector<int32_t>> tables(2);
    const int blocks_per_seq = 128 / bs;
    ForwardBatch batch;
    for (size_t s = 0; s < 2; ++s) {
        for (int b = 0; b < blocks_per_seq; ++b) tables[s].push_back(static_cast<int32_t>(s + 1) * blocks_per_seq + b);
        batch.seqs.push_back({.block_table = tables[s], .pos0 = 0, .tokens = prompts[s]});
    }
    out.ids.resize(2);
    std::vector<int32_t> next;
    for (int step = 0; step < 20; ++step) {
        runner.forward_argmax(batch, next);
        for (size_t s = 0; s < 2; ++s) {
            out.ids[s].push_back(next[s]);
            batch.seqs[s].pos0 = static_cast<int32_t>(prompts[s].size()) + step;
            batch.seqs[s].tokens = std::span<const int32_t>(&out.ids[s].back(), 1);
        }
    }
    return out;
}

class StreamedLayersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamedLayersTest, EverySplitEqualsAllGpu) {
    if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    auto ckpt = model::Checkpoint::open(fixture_dir(GetParam()));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
    const auto golden = testing::read_golden(GetParam());
    const auto ids = golden["ids_300"].get<std::vector<int32_t>>();
    const int num_layers = (*ckpt)->config().num_layers;

    auto all_gpu = make_runner(**ckpt, cuda_options(-1));
    ASSERT_TRUE(all_gpu.ok()) << all_gpu.status().message();
    const RunOutput reference = run(**all_gpu, ids);
    all_gpu->reset();
    for (int gpu_layers = 0; gpu_layers < num_layers; ++gpu_layers) {
        std::string placement;
        auto split = make_runner(**ckpt, cuda_options(gpu_layers), &placement);
        ASSERT_TRUE(split.ok()) << split.status().message();
        const std::string said = std::to_string(gpu_layers) + " of " + std::to_string(num_layers) + " layers on the GPU, " +
                                 std::to_string(num_layers - gpu_layers) + " streamed";
        EXPECT_NE(placement.find(said), std::string::npos) << placement;
        const RunOutput got = run(**split, ids);
        ASSERT_EQ(got.logits.size(), reference.logits.size());
        double max_diff = 0;
        for (size_t i = 0; i < got.logits.size(); ++i)
            max_diff = std::max(max_diff, static_cast<double>(std::fabs(got.logits[i] - reference.logits[i])));
        std::printf("[stream] %s: %d of %d layers on the GPU, %d streamed: max |logit diff| %.3g, greedy %s\n",
                    GetParam().c_str(), gpu_layers, num_layers, num_layers - gpu_layers, max_diff,
                    got.ids == reference.ids ? "identical" : "DIFFERENT");
        EXPECT_LE(max_diff, 1e-6) << gpu_layers << " GPU layers";
        EXPECT_EQ(got.ids, reference.ids) << gpu_layers << " GPU layers";
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamedLayersTest, ::testing::ValuesIn(testing::fixture_names()),
                         [](const auto& info) { return info.param; });

// A GPU budget too small for the resident weights and the streaming buffers is one error line that
// names the numbers.
TEST(StreamedLayersBudgetTest, TooSmallBudgetIsOneClearError) {
    if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    auto ckpt = model::Checkpoint::open(fixture_dir(testing::fixture_names().front()));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
    RunnerOptions o = cuda_options(-1);
    o.offload = OffloadMode::kStream;
    o.gpu_memory_bytes = int64_t{1} << 20;   // 1 MiB: less than the workspaces alone
    auto runner = make_runner(**ckpt, o);
    ASSERT_FALSE(runner.ok());
    const std::string message = runner.status().message();
    std::printf("[stream] too small a budget: %s\n", message.c_str());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("--gpu-memory-gb 0.001 GiB"), std::string::npos) << message;
    EXPECT_NE(message.find("workspaces"), std::string::npos) << message;
    EXPECT_NE(message.find("resident weights"), std::string::npos) << message;
}

}  // namespace
}  // namespace hichat::executor
