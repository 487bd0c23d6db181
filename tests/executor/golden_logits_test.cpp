// The CPU forward pass against transformers (fp32 on the same bf16 weights): logits and greedy tokens.
#include <gtest/gtest.h>

#include <cstdio>

#include "backend/cpu/cpu_features.h"
#include "common/fixtures.h"
#include "executor/cpu_runner.h"
#include "model/checkpoint.h"
#include "sampling/sampler.h"

namespace hichat::executor {
namespace {

using testing::fixture_dir;

class GoldenTest : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto ckpt = model::Checkpoint::open(fixture_dir(GetParam()));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        golden_ = testing::read_golden(GetParam());
    }

    std::vector<float> score(const std::vector<int32_t>& ids) {
        CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32});
        ForwardBatch batch;
        batch.seqs.push_back({.block_table = table_, .pos0 = 0, .tokens = ids, .all_logits = true});
        std::vector<float> logits;
        runner.forward(batch, logits);
        return logits;
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    nlohmann::json golden_;
    // Blocks in a scrambled order, so that paging is exercised: position p is in table_[p / 16].
    const std::vector<int32_t> table_ = {5, 3, 30, 0, 7, 1, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                         21, 22, 23, 24, 25, 26, 27, 28, 29, 31};
};

TEST_P(GoldenTest, LogitsMatchTransformers) {
    for (int n : {40, 300}) {
        auto ids = golden_["ids_" + std::to_string(n)].get<std::vector<int32_t>>();
        auto expected = testing::read_floats(fixture_dir(GetParam()) + "/logits_" + std::to_string(n) + ".bin");
        ASSERT_EQ(expected.size(), ids.size() * static_cast<size_t>(checkpoint_->config().vocab_size));
        double err = testing::relative_error(score(ids), expected);
        std::printf("%s, length %d, simd %s: relative error %.3g\n", GetParam().c_str(), n,
                    std::string(cpu::simd_level_name(cpu::active_simd_level())).c_str(), err);
        EXPECT_LT(err, 1e-3) << GetParam() << " at length " << n;
    }
}

TEST_P(GoldenTest, GreedyContinuationMatchesTransformers) {
    auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    auto expected = golden_["greedy"].get<std::vector<int32_t>>();
    CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32});
    std::vector<int32_t> generated;
    std::vector<float> logits;
    ForwardBatch batch;
    batch.seqs.push_back({.block_table = table_, .pos0 = 0, .tokens = prompt, .all_logits = false});
    while (generated.size() < expected.size()) {
        runner.forward(batch, logits);
        generated.push_back(sampling::argmax(logits));
        batch.seqs[0].pos0 = static_cast<int32_t>(prompt.size() + generated.size() - 1);
        batch.seqs[0].tokens = std::span<const int32_t>(&generated.back(), 1);
    }
    EXPECT_EQ(generated, expected) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::ValuesIn(testing::fixture_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hichat::executor
