// The CUDA forward pass against transformers (bf16 tolerance), and batched greedy equal to unbatched.
// Skips visibly without a device.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "executor/cpu_runner.h"
#include "executor/runner_factory.h"
#include "model/checkpoint.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace hichat::executor {
namespace {

using testing::fixture_dir;

class CudaGoldenTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (!cuda_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
        auto ckpt = model::Checkpoint::open(fixture_dir(GetParam()));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        golden_ = testing::read_golden(GetParam());
        auto runner = make_runner(*checkpoint_, {.device = DeviceKind::kCuda,
                                                 .gpu_memory_fraction = 0.05,
                                                 .max_num_seqs = 8,
                                                 .max_num_tokens_per_step = 512,
                                                 .max_context_tokens = 512});
        ASSERT_TRUE(runner.ok()) << runner.status().message();
        runner_ = std::move(runner).value();
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    nlohmann::json golden_;
    std::unique_ptr<ModelRunner> runner_;
};

TEST_P(CudaGoldenTest, LogitsMatchTransformersWithinBf16Tolerance) {
    for (int n : {40, 300}) {
        auto ids = golden_["ids_" + std::to_string(n)].get<std::vector<int32_t>>();
        auto expected = testing::read_floats(fixture_dir(GetParam()) + "/logits_" + std::to_string(n) + ".bin");
        const auto table = identity_block_table(n, runner_->kv_block_size_tokens());
        ForwardBatch batch;
        batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = ids, .all_logits = true});
        std::vector<float> logits;
        runner_->forward(batch, logits);
        const double err = testing::relative_error(logits, expected);
        std::printf("[cuda] %s length %d: relative error %.2e\n", GetParam().c_str(), n, err);
        EXPECT_LT(err, 3e-2) << GetParam() << " at length " << n;
    }
}

// Greedy continuations of 4 prompts decoded together equal each decoded alone.
TEST_P(CudaGoldenTest, BatchedGreedyEqualsUnbatched) {
    auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 4; ++i) prompts.emplace_back(ids.begin() + i * 30, ids.begin() + i * 30 + 5 + 7 * i);
    const int steps = 24, bs = runner_->kv_block_size_tokens(), blocks_per_seq = 8;
    auto run = [&](const std::vector<int>& which) {
        std::vector<std::vector<int32_t>> out(which.size());
        std::vector<std::vector<int32_t>> tables(which.size());
        ForwardBatch batch;
        for (size_t s = 0; s < which.size(); ++s) {
            for (int b = 0; b < blocks_per_seq; ++b) tables[s].push_back(which[s] * blocks_per_seq + b);
            batch.seqs.push_back({.block_table = tables[s], .pos0 = 0, .tokens = prompts[which[s]]});
        }
        std::vector<float> logits;
        const size_t vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
        for (int step = 0; step < steps; ++step) {
            runner_->forward(batch, logits);
            for (size_t s = 0; s < which.size(); ++s) {
                out[s].push_back(sampling::argmax(std::span<const float>(logits).subspan(s * vocab, vocab)));
                batch.seqs[s].pos0 = static_cast<int32_t>(prompts[which[s]].size()) + step;
                batch.seqs[s].tokens = std::span<const int32_t>(&out[s].back(), 1);
            }
        }
        (void)bs;
        return out;
    };
    auto together = run({0, 1, 2, 3});
    for (int i = 0; i < 4; ++i) EXPECT_EQ(run({i})[0], together[static_cast<size_t>(i)]) << "prompt " << i;
}

// forward_argmax (argmax on the device, ids only) equals the argmax of the logits forward() returns.
TEST_P(CudaGoldenTest, DeviceArgmaxEqualsHostArgmax) {
    auto ids = golden_["ids_40"].get<std::vector<int32_t>>();
    const auto table = identity_block_table(40, runner_->kv_block_size_tokens());
    ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = ids, .all_logits = true});
    std::vector<float> logits;
    std::vector<int32_t> argmax_ids;
    runner_->forward(batch, logits);
    runner_->forward_argmax(batch, argmax_ids);  // same positions again: same K/V, same logits
    const size_t vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    ASSERT_EQ(argmax_ids.size(), ids.size());
    for (size_t r = 0; r < ids.size(); ++r) {
        EXPECT_EQ(argmax_ids[r], sampling::argmax(std::span<const float>(logits).subspan(r * vocab, vocab))) << "row " << r;
    }
}

// How a decode run picks its tokens.
enum class Pick { kHostArgmax, kDeviceArgmax, kDeviceSample };

// Three prompts decoded together (3 sequences: decode graphs pad them to 4; the 250-token prompt
// crosses the 256-token context bucket), each with its own blocks; the batch of their prefill.
struct ThreePrompts {
    ThreePrompts(const ModelRunner& runner, const std::vector<int32_t>& ids)
        : prompts{{ids.begin(), ids.begin() + 250}, {ids.begin() + 3, ids.begin() + 8}, {ids.begin() + 40, ids.begin() + 57}},
          tables(prompts.size()) {
        const int blocks_per_seq = 512 / runner.kv_block_size_tokens();
        for (size_t s = 0; s < prompts.size(); ++s) {
            for (int b = 0; b < blocks_per_seq; ++b) tables[s].push_back(static_cast<int32_t>(s) * blocks_per_seq + b);
            batch.seqs.push_back({.block_table = tables[s], .pos0 = 0, .tokens = prompts[s]});
        }
    }
    ThreePrompts(const ThreePrompts&) = delete;   // the batch points into prompts and tables
    ThreePrompts& operator=(const ThreePrompts&) = delete;

    const std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<int32_t>> tables;
    ForwardBatch batch;
};

constexpr int kDecodeSteps = 24;

// Decodes kDecodeSteps tokens for the three prompts. kDeviceSample uses `rule` with u drawn from
// Rng(seed) per row and step.
std::vector<std::vector<int32_t>> decode_three(ModelRunner& runner, const std::vector<int32_t>& ids, Pick pick,
                                               RowSampling rule = {}, uint64_t seed = 0) {
    ThreePrompts three(runner, ids);
    const auto& prompts = three.prompts;
    ForwardBatch& batch = three.batch;
    const size_t vocab = static_cast<size_t>(runner.model_config().vocab_size);
    sampling::Rng rng(seed);
    std::vector<std::vector<int32_t>> out(prompts.size());
    std::vector<float> logits;
    std::vector<int32_t> next;
    std::vector<RowSampling> rows(prompts.size(), rule);
    for (int step = 0; step < kDecodeSteps; ++step) {
        if (pick == Pick::kDeviceArgmax) {
            runner.forward_argmax(batch, next);
        } else if (pick == Pick::kDeviceSample) {
            for (RowSampling& r : rows) r.u = static_cast<float>(rng.next_unit());
            runner.forward_sample(batch, rows, next);
        } else {
            runner.forward(batch, logits);
            next.clear();
            for (size_t s = 0; s < prompts.size(); ++s)
                next.push_back(sampling::argmax(std::span<const float>(logits).subspan(s * vocab, vocab)));
        }
        EXPECT_EQ(next.size(), prompts.size());
        for (size_t s = 0; s < prompts.size(); ++s) {
            EXPECT_GE(next[s], 0);
            EXPECT_LT(next[s], static_cast<int32_t>(vocab));
            out[s].push_back(next[s]);
            batch.seqs[s].pos0 = static_cast<int32_t>(prompts[s].size()) + step;
            batch.seqs[s].tokens = std::span<const int32_t>(&out[s].back(), 1);
        }
    }
    return out;
}

// Greedy decode through forward_argmax (decode steps replay CUDA graphs) equals decode through
// forward() (eager) + host argmax.
TEST_P(CudaGoldenTest, GraphedDecodeEqualsEagerDecode) {
    auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
    const auto eager = decode_three(*runner_, ids, Pick::kHostArgmax);
    const auto graphed = decode_three(*runner_, ids, Pick::kDeviceArgmax);
    for (size_t s = 0; s < eager.size(); ++s) EXPECT_EQ(graphed[s], eager[s]) << "prompt " << s;
}

// make_runner() captures the decode graphs of the shortest context bucket (256 tokens) for every batch
// bucket up to max_num_seqs (1, 2, 4, 8), greedy and sampled, before the first step: a decode run then
// captures only what crosses into a longer context (the 250-token prompt's 512 bucket, once).
TEST_P(CudaGoldenTest, StartCapturesTheShortContextGraphsOfEveryBatchBucket) {
    EXPECT_EQ(runner_->num_graphs_captured(), 8);
    auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
    const auto eager = decode_three(*runner_, ids, Pick::kHostArgmax);
    EXPECT_EQ(runner_->num_graphs_captured(), 8) << "eager steps capture nothing";
    const auto graphed = decode_three(*runner_, ids, Pick::kDeviceArgmax);
    EXPECT_EQ(runner_->num_graphs_captured(), 9);
    for (size_t s = 0; s < eager.size(); ++s) EXPECT_EQ(graphed[s], eager[s]) << "prompt " << s;
}

// The same three prompts, greedy, with step N + 1 submitted before step N's ids are collected: its
// tokens are the placeholders -(s + 1), which the runner resolves from the previous step's device ids.
std::vector<std::vector<int32_t>> decode_three_pipelined(ModelRunner& runner, const std::vector<int32_t>& ids) {
    ThreePrompts three(runner, ids);
    const auto& prompts = three.prompts;
    ForwardBatch& batch = three.batch;
    const std::vector<int32_t> placeholders = {-1, -2, -3};
    const std::vector<RowSampling> greedy(prompts.size());
    std::vector<std::vector<int32_t>> out(prompts.size());
    std::vector<int32_t> got;
    auto collect = [&] {
        runner.collect(got);
        EXPECT_EQ(got.size(), prompts.size());
        for (size_t s = 0; s < prompts.size() && s < got.size(); ++s) out[s].push_back(got[s]);
    };
    for (int step = 0; step < kDecodeSteps; ++step) {
        runner.submit(batch, greedy);
        if (step > 0) collect();   // the previous step's ids, while this one runs
        for (size_t s = 0; s < prompts.size(); ++s) {
            batch.seqs[s].pos0 = static_cast<int32_t>(prompts[s].size()) + step;
            batch.seqs[s].tokens = std::span<const int32_t>(&placeholders[s], 1);
        }
    }
    collect();
    return out;
}

TEST_P(CudaGoldenTest, PipelinedDecodeEqualsEagerDecode) {
    ASSERT_TRUE(runner_->runs_async());
    auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
    const auto eager = decode_three(*runner_, ids, Pick::kHostArgmax);
    const auto pipelined = decode_three_pipelined(*runner_, ids);
    for (size_t s = 0; s < eager.size(); ++s) EXPECT_EQ(pipelined[s], eager[s]) << "prompt " << s;
}

// Sampling on the device: top_k 1 is greedy whatever u is; a seeded run repeats exactly (the first
// run captures the sampled decode graphs, the second replays them); another seed differs somewhere.
TEST_P(CudaGoldenTest, DeviceSamplingIsSeededAndTopKOneIsGreedy) {
    ASSERT_TRUE(runner_->samples_on_device());
    auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
    const auto greedy = decode_three(*runner_, ids, Pick::kHostArgmax);
    const auto top1 = decode_three(*runner_, ids, Pick::kDeviceSample, {.temperature = 0.7f, .top_k = 1}, 9);
    for (size_t s = 0; s < greedy.size(); ++s) EXPECT_EQ(top1[s], greedy[s]) << "prompt " << s;
    const RowSampling rule{.temperature = 1.0f, .top_k = 0, .top_p = 0.95f, .min_p = 0.0f};
    const auto a = decode_three(*runner_, ids, Pick::kDeviceSample, rule, 5);
    const auto b = decode_three(*runner_, ids, Pick::kDeviceSample, rule, 5);
    const auto c = decode_three(*runner_, ids, Pick::kDeviceSample, rule, 6);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaGoldenTest, ::testing::ValuesIn(testing::fixture_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hichat::executor
