// What the engine reports of each step (EngineConfig::on_step, behind serve's metrics and --step-log):
// the graphs a runner captured are charged to the step measured beside the capture, never those it
// captured before the engine started; the cost model's prediction appears once the model is ready.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "engine_test_util.h"
#include "executor/cpu_runner.h"

namespace hichat::engine {
namespace {

using testing_util::CollectingSink;

// A CPU runner that says it captured 5 graphs before the first step and one more at its 4th forward pass.
class CapturingRunner final : public executor::ModelRunner {
public:
    explicit CapturingRunner(std::unique_ptr<executor::CpuRunner> inner) : inner_(std::move(inner)) {}
    const model::ModelConfig& model_config() const override { return inner_->model_config(); }
    int num_kv_blocks() const override { return inner_->num_kv_blocks(); }
    int kv_block_size_tokens() const override { return inner_->kv_block_size_tokens(); }
    void forward(const executor::ForwardBatch& batch, std::vector<float>& logits) override {
        if (++num_forwards_ == 4) ++num_graphs_;
        inner_->forward(batch, logits);
    }
    int64_t num_graphs_captured() const override { return num_graphs_; }

private:
    std::unique_ptr<executor::CpuRunner> inner_;
    std::atomic<int> num_forwards_{0};
    std::atomic<int64_t> num_graphs_{5};
};

class StepReportTest : public testing_util::TinyModelTest {};

TEST_F(StepReportTest, CapturesAreChargedToTheStepBesideThemAndPredictionsFollowTheModel) {
    std::mutex mu;
    std::vector<StepReport> reports;
    EngineConfig config{.scheduler = {.max_num_seqs = 4, .max_num_tokens_per_step = 256, .prefill_chunk_tokens = 256},
                        .on_step = [&](const StepReport& r) {
                            std::lock_guard<std::mutex> lock(mu);
                            reports.push_back(r);
                        }};
    config.overlap = StepOverlap::kOff;
    Engine engine(std::make_unique<CapturingRunner>(
                      std::make_unique<executor::CpuRunner>(*checkpoint_, executor::CpuRunnerConfig{.num_threads = 1})),
                  *tokenizer_, config);
    for (int i = 0; i < 4; ++i) {   // one at a time: a prefill step, then decodes
        auto sink = std::make_shared<CollectingSink>();
        Request r;
        r.id = {static_cast<uint64_t>(i + 1)};
        r.prompt = {1, 2, 3, static_cast<int32_t>(10 + i)};
        r.max_tokens = 6;
        r.sink = sink;
        engine.submit(std::move(r));
        ASSERT_TRUE(sink->wait());
    }
    engine.drain_and_stop();
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_GE(reports.size(), 10u);
    int captured = 0;
    for (size_t i = 0; i < reports.size(); ++i) {
        captured += reports[i].graphs_captured;
        EXPECT_EQ(reports[i].graphs_captured, i == 3 ? 1 : 0) << "step " << i;
        EXPECT_GT(reports[i].ms, 0.0);
        EXPECT_GE(reports[i].blocked_ms, 0.0);
    }
    EXPECT_EQ(captured, 1);
    // 8 steps, 4 of them with prefill, before the cost model predicts anything.
    EXPECT_EQ(reports[0].predicted_ms, 0.0);
    EXPECT_GT(reports.back().predicted_ms, 0.0);
    EXPECT_GT(reports[1].decode_keys, 0.0) << "the second step decodes over the prompt";
}

}  // namespace
}  // namespace hichat::engine
