// Batched and chunked forward passes give the same logits as one sequence run alone in one pass.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/fixtures.h"
#include "executor/cpu_runner.h"
#include "model/checkpoint.h"

namespace hichat::executor {
namespace {

class BatchingTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto ckpt = model::Checkpoint::open(testing::fixture_dir("qwen2"));
        ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
        checkpoint_ = std::move(ckpt).value();
        auto golden = testing::read_golden("qwen2");
        long_ids_ = golden["ids_300"].get<std::vector<int32_t>>();
        short_ids_ = golden["ids_40"].get<std::vector<int32_t>>();
    }

    std::vector<float> alone(const std::vector<int32_t>& ids) {
        CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32});
        const auto table = identity_block_table(static_cast<int>(ids.size()), 16);
        ForwardBatch batch;
        batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = ids, .all_logits = true});
        std::vector<float> logits;
        runner.forward(batch, logits);
        return logits;
    }

    std::unique_ptr<model::Checkpoint> checkpoint_;
    std::vector<int32_t> long_ids_, short_ids_;
};

TEST_F(BatchingTest, ChunkedPrefillEqualsOnePass) {
    const auto expected = alone(long_ids_);
    CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32});
    const auto table = identity_block_table(static_cast<int>(long_ids_.size()), 16);
    std::vector<float> all, logits;
    for (size_t begin = 0; begin < long_ids_.size(); begin += 64) {
        size_t end = std::min(long_ids_.size(), begin + 64);
        ForwardBatch batch;
        batch.seqs.push_back({.block_table = table,
                              .pos0 = static_cast<int32_t>(begin),
                              .tokens = std::span<const int32_t>(long_ids_).subspan(begin, end - begin),
                              .all_logits = true});
        runner.forward(batch, logits);
        all.insert(all.end(), logits.begin(), logits.end());
    }
    EXPECT_LT(testing::relative_error(all, expected), 1e-5);
}

TEST_F(BatchingTest, ForwardArgmaxIsTheArgmaxOfEachLogitsRow) {
    const auto logits = alone(short_ids_);
    CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32});
    const auto table = identity_block_table(static_cast<int>(short_ids_.size()), 16);
    ForwardBatch batch;
    batch.seqs.push_back({.block_table = table, .pos0 = 0, .tokens = short_ids_, .all_logits = true});
    std::vector<int32_t> ids;
    runner.forward_argmax(batch, ids);
    const size_t vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    ASSERT_EQ(ids.size(), short_ids_.size());
    for (size_t r = 0; r < ids.size(); ++r) {
        const auto row = logits.begin() + static_cast<ptrdiff_t>(r * vocab);
        EXPECT_EQ(ids[r], std::max_element(row, row + static_cast<ptrdiff_t>(vocab)) - row) << "row " << r;
    }
}

TEST_F(BatchingTest, TwoSequencesInOneBatchEqualEachAlone) {
    const auto expected_long = alone(long_ids_);
    const auto expected_short = alone(short_ids_);
    const size_t vocab = static_cast<size_t>(checkpoint_->config().vocab_size);
    CpuRunner runner(*checkpoint_, {.num_threads = 2, .num_kv_blocks = 32});
    // Interleaved blocks: the short sequence holds odd blocks, the long one even blocks.
    std::vector<int32_t> short_table = {1, 3, 5, 7}, long_table;
    for (int b = 0; b < 20; ++b) long_table.push_back(b < 4 ? 2 * b : b + 8);
    ForwardBatch batch;
    batch.seqs.push_back({.block_table = short_table, .pos0 = 0, .tokens = short_ids_, .all_logits = true});
    batch.seqs.push_back({.block_table = long_table, .pos0 = 0, .tokens = long_ids_, .all_logits = false});
    std::vector<float> logits;
    runner.forward(batch, logits);
    ASSERT_EQ(logits.size(), (short_ids_.size() + 1) * vocab);
    std::vector<float> got_short(logits.begin(), logits.begin() + static_cast<ptrdiff_t>(short_ids_.size() * vocab));
    std::vector<float> got_last(logits.end() - static_cast<ptrdiff_t>(vocab), logits.end());
    std::vector<float> want_last(expected_long.end() - static_cast<ptrdiff_t>(vocab), expected_long.end());
    EXPECT_LT(testing::relative_error(got_short, expected_short), 1e-5);
    EXPECT_LT(testing::relative_error(got_last, want_last), 1e-5);

    // Then one decode step for both: each continues its own cache.
    const int32_t next_short = 5, next_long = 7;
    ForwardBatch step;
    step.seqs.push_back({.block_table = long_table, .pos0 = static_cast<int32_t>(long_ids_.size()),
                         .tokens = std::span<const int32_t>(&next_long, 1)});
    step.seqs.push_back({.block_table = short_table, .pos0 = static_cast<int32_t>(short_ids_.size()),
                         .tokens = std::span<const int32_t>(&next_short, 1)});
    runner.forward(step, logits);
    auto extended_short = short_ids_;
    extended_short.push_back(next_short);
    auto ref = alone(extended_short);
    std::vector<float> want(ref.end() - static_cast<ptrdiff_t>(vocab), ref.end());
    std::vector<float> got(logits.begin() + static_cast<ptrdiff_t>(vocab), logits.end());
    EXPECT_LT(testing::relative_error(got, want), 1e-5);
}

}  // namespace
}  // namespace hichat::executor
