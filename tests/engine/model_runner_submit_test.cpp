// The default ModelRunner::submit()/collect(): a placeholder -(r + 1) in a batch takes the id the
// previously submitted step picked for its logit row r. Checked against forward_argmax() /
// forward_sample() on a second runner given the explicit ids; broken contracts CHECK.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"
#include "host_sampling_runner.h"

namespace hichat::engine {
namespace {

using executor::ForwardBatch;
using executor::RowSampling;

class ModelRunnerSubmitTest : public testing_util::TinyModelTest {
protected:
    std::unique_ptr<executor::CpuRunner> make_runner() {
        return std::make_unique<executor::CpuRunner>(
            *checkpoint_, executor::CpuRunnerConfig{.num_threads = 2, .num_kv_blocks = 8});
    }
    // Two sequences in disjoint blocks: 0-1 and 2-3 (block size 16).
    const std::vector<int32_t> table0_{0, 1}, table1_{2, 3};
};

TEST_F(ModelRunnerSubmitTest, PlaceholdersTakeThePreviousStepsIds) {
    auto piped = make_runner(), reference = make_runner();
    const auto ids = golden_["ids_300"].get<std::vector<int32_t>>();
    const std::vector<int32_t> p0(ids.begin(), ids.begin() + 7), p1(ids.begin() + 20, ids.begin() + 32);
    const std::vector<RowSampling> greedy2(2);

    // Step 1: both prompts.
    ForwardBatch b1;
    b1.seqs = {{.block_table = table0_, .pos0 = 0, .tokens = p0}, {.block_table = table1_, .pos0 = 0, .tokens = p1}};
    piped->submit(b1, greedy2);
    std::vector<int32_t> want1;
    reference->forward_argmax(b1, want1);

    // Step 2, submitted before step 1 is collected, sequences in the other order: seq 1 continues
    // with step 1's row 1, seq 0 with row 0.
    const std::vector<int32_t> ph1{-2}, ph0{-1};
    ForwardBatch b2;
    b2.seqs = {{.block_table = table1_, .pos0 = 12, .tokens = ph1}, {.block_table = table0_, .pos0 = 7, .tokens = ph0}};
    piped->submit(b2, greedy2);
    std::vector<int32_t> got1, got2;
    piped->collect(got1);
    piped->collect(got2);
    EXPECT_EQ(got1, want1);
    const std::vector<int32_t> e1{want1[1]}, e0{want1[0]};
    ForwardBatch r2;
    r2.seqs = {{.block_table = table1_, .pos0 = 12, .tokens = e1}, {.block_table = table0_, .pos0 = 7, .tokens = e0}};
    std::vector<int32_t> want2;
    reference->forward_argmax(r2, want2);
    EXPECT_EQ(got2, want2);

    // Step 3, after the collect: a placeholder still refers to the last submitted step, also inside a
    // longer chunk; seq 1 takes explicit tokens.
    const std::vector<int32_t> chunk0{-2, 17, 42}, chunk1{5};
    ForwardBatch b3;
    b3.seqs = {{.block_table = table0_, .pos0 = 8, .tokens = chunk0}, {.block_table = table1_, .pos0 = 13, .tokens = chunk1}};
    piped->submit(b3, greedy2);
    std::vector<int32_t> got3;
    piped->collect(got3);
    const std::vector<int32_t> e3{want2[1], 17, 42};
    ForwardBatch r3;
    r3.seqs = {{.block_table = table0_, .pos0 = 8, .tokens = e3}, {.block_table = table1_, .pos0 = 13, .tokens = chunk1}};
    std::vector<int32_t> want3;
    reference->forward_argmax(r3, want3);
    EXPECT_EQ(got3, want3);
}

// Rows that sample go through forward_sample() with the same RowSampling.
TEST_F(ModelRunnerSubmitTest, SamplingRowsUseForwardSample) {
    testing_util::HostSamplingRunner piped(make_runner()), reference(make_runner());
    const auto prompt = golden_["prompt"].get<std::vector<int32_t>>();
    const auto n = static_cast<int32_t>(prompt.size());
    const std::vector<RowSampling> rows{{.temperature = 1.2f, .top_p = 0.9f, .u = 0.37f}};
    ForwardBatch b1;
    b1.seqs = {{.block_table = table0_, .pos0 = 0, .tokens = prompt}};
    piped.submit(b1, rows);
    const std::vector<int32_t> ph{-1};
    ForwardBatch b2;
    b2.seqs = {{.block_table = table0_, .pos0 = n, .tokens = ph}};
    const std::vector<RowSampling> rows2{{.temperature = 0.7f, .top_k = 5, .u = 0.81f}};
    piped.submit(b2, rows2);
    std::vector<int32_t> got1, got2, want1, want2;
    piped.collect(got1);
    piped.collect(got2);
    reference.forward_sample(b1, rows, want1);
    const std::vector<int32_t> explicit_token{want1[0]};
    ForwardBatch r2;
    r2.seqs = {{.block_table = table0_, .pos0 = n, .tokens = explicit_token}};
    reference.forward_sample(r2, rows2, want2);
    EXPECT_EQ(got1, want1);
    EXPECT_EQ(got2, want2);
    EXPECT_EQ(piped.num_device_steps.load(), 2);
}

// A runner without a model: the logits of a sequence peak at (sum of its tokens) mod vocab.
class FakeRunner final : public executor::ModelRunner {
public:
    FakeRunner() { cfg_.vocab_size = 100; }
    const model::ModelConfig& model_config() const override { return cfg_; }
    int num_kv_blocks() const override { return 4; }
    int kv_block_size_tokens() const override { return 16; }
    void forward(const ForwardBatch& batch, std::vector<float>& logits) override {
        logits.assign(batch.seqs.size() * 100, 0.0f);
        for (size_t s = 0; s < batch.seqs.size(); ++s) {
            int64_t sum = 0;
            for (int32_t t : batch.seqs[s].tokens) sum += t;
            EXPECT_GE(sum, 0);
            logits[s * 100 + static_cast<size_t>(sum % 100)] = 1.0f;
        }
    }

private:
    model::ModelConfig cfg_;
};

TEST(ModelRunnerSubmitDeathTest, BrokenContractsCheck) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const std::vector<int32_t> table{0}, two{3, 4}, ph_row1{-2}, ph_row2{-3};
    const std::vector<RowSampling> one_row(1);
    ForwardBatch first;
    first.seqs = {{.block_table = table, .pos0 = 0, .tokens = two}};
    ForwardBatch second;
    second.seqs = {{.block_table = table, .pos0 = 2, .tokens = ph_row1}};
    FakeRunner runner;
    // The resolution itself, on the fake: row 0 of step 1 is 7, so step 2 sees 7 and picks 7.
    runner.submit(first, one_row);
    ForwardBatch resolvable;
    const std::vector<int32_t> ph_row0{-1};
    resolvable.seqs = {{.block_table = table, .pos0 = 2, .tokens = ph_row0}};
    runner.submit(resolvable, one_row);
    std::vector<int32_t> ids;
    runner.collect(ids);
    EXPECT_EQ(ids, std::vector<int32_t>{7});
    runner.collect(ids);
    EXPECT_EQ(ids, std::vector<int32_t>{7});
    // The previous step had one row: -2 and -3 are out of range.
    EXPECT_DEATH(runner.submit(second, one_row), "refers past");
    ForwardBatch third;
    third.seqs = {{.block_table = table, .pos0 = 2, .tokens = ph_row2}};
    EXPECT_DEATH(runner.submit(third, one_row), "refers past");
    EXPECT_DEATH(runner.collect(ids), "no step outstanding");
    EXPECT_DEATH(
        {
            FakeRunner r;
            r.submit(first, one_row);
            r.submit(first, one_row);
            r.submit(first, one_row);
        },
        "two steps outstanding");
}

}  // namespace
}  // namespace hichat::engine
