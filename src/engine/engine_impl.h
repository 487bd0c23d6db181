// Engine::Impl: the engine's state and its engine-thread steps, shared by engine.cpp (the loop, the
// synchronous step, token processing) and pipelined_step.cpp (the overlapped step). Private to
// src/engine.
#pragma once

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/engine.h"
#include "engine/inflight_step.h"
#include "engine/request_queue.h"
#include "engine/sequence.h"
#include "base/thread_pool.h"
#include "kv/block_manager.h"

namespace hichat::engine {

class Engine::Impl {
public:
    Impl(std::unique_ptr<executor::ModelRunner> runner, const tokenizer::Tokenizer& tokenizer,
         const EngineConfig& config)
        : runner_(std::move(runner)),
          tokenizer_(tokenizer),
          config_(config),
          blocks_(runner_->num_kv_blocks(), runner_->kv_block_size_tokens(), config.prefix_cache,
                  runner_->num_host_kv_blocks()),
          scheduler_(config.scheduler, blocks_),
          queue_(static_cast<size_t>(config.max_waiting)),
          overlap_(config.overlap == StepOverlap::kOn ||
                   (config.overlap == StepOverlap::kAuto && runner_->runs_async())),
          mask_pool_(mask_threads()),
          graphs_seen_(runner_->num_graphs_captured()) {   // those captured at start delayed no step
        publish_stats();
        thread_ = std::thread([this] { loop(); });
    }

    ~Impl() {
        stopping_ = true;
        queue_.stop();
        if (thread_.joinable()) thread_.join();
    }

    Admission submit(Request request) {
        if (stopping_ || draining_) return Admission::kStopped;
        if (num_waiting_.load() + static_cast<int>(queue_.size()) >= config_.max_waiting) return Admission::kQueueFull;
        if (overloaded()) return Admission::kOverloaded;
        return queue_.push(std::move(request)) ? Admission::kAccepted : Admission::kQueueFull;
    }
    Admission submit(std::vector<Request> requests) {
        if (stopping_ || draining_) return Admission::kStopped;
        const auto n = static_cast<int>(requests.size());
        if (num_waiting_.load() + static_cast<int>(queue_.size()) + n > config_.max_waiting) return Admission::kQueueFull;
        if (overloaded()) return Admission::kOverloaded;
        return queue_.push_all(requests) ? Admission::kAccepted : Admission::kQueueFull;
    }
    void cancel(RequestId id) { queue_.cancel(id); }
    bool overloaded() const { return config_.max_queue_wait_ms > 0 && predicted_wait_ms_.load() > config_.max_queue_wait_ms; }
    double predicted_wait_ms() const { return predicted_wait_ms_.load(); }
    EngineStats stats() const {
        std::lock_guard<std::mutex> lock(stats_mu_);
        return stats_;
    }
    int max_context_tokens() const {
        int limit = std::min(runner_->model_config().max_position_embeddings,
                             runner_->num_kv_blocks() * runner_->kv_block_size_tokens());
        return config_.max_model_len > 0 ? std::min(limit, config_.max_model_len) : limit;
    }
    const model::ModelConfig& model_config() const { return runner_->model_config(); }
    void drain_and_stop() {
        draining_ = true;
        queue_.stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    void loop();
    void admit_new_requests();
    void apply_cancellations_and_deadlines();
    // Plans the next step and starts the KV copies it needs (ordered before it on the runner).
    // Pipelined, a sequence whose token in flight certainly ends it sits out.
    scheduler::StepPlan plan_next(bool pipelined);
    executor::ForwardBatch build_batch(const scheduler::StepPlan& plan);
    // Each chunk's RowSampling into rows_, drawing u for sampling rows that are not greedy.
    void fill_row_sampling(const scheduler::StepPlan& plan);

    // Synchronous step: plan, forward (waits), sample, process the tokens.
    void sync_step();
    // Runs the step's forward pass; the runner picks the tokens (ids_step_) when every row is plain
    // greedy, or when it samples on the device and no row needs penalties; else logits come back.
    void run_forward(const scheduler::StepPlan& plan, const executor::ForwardBatch& batch);
    void commit(const scheduler::StepPlan& plan, const executor::ForwardBatch& batch);
    // The prompt logprobs that a chunk's logit rows (all_logits, host logits) give.
    void record_prompt_logprobs(Sequence& seq, std::span<const float> rows);

    // Pipelined step: plan and submit step N + 1, then collect and process step N.
    void pipelined_step();
    // Whether the runner picks every unfinished sequence's tokens (no host logits needed).
    bool every_runner_picked() const;
    // masked: the step has rows under a grammar (runner_->submit_forward(); pick_masked() follows).
    void submit_step(const scheduler::StepPlan& plan, bool masked);
    // Whether a row of the plan samples under a grammar on the device (the runner picks with masks).
    bool device_masked(const scheduler::StepPlan& plan) const;
    // The masks of a submitted step's grammar rows (of its `rows` sampling rows, num_rows logit rows in
    // all), computed on mask_pool_ from each matcher's state after its last token, then runner_->pick().
    // A sequence whose grammar allows no token ends (stop).
    void pick_masked(std::span<const InflightStep::SampledRow> rows, size_t num_rows);
    // The plan's sampling rows (before the step is committed: ScheduledChunk::samples() reads the state).
    std::vector<InflightStep::SampledRow> sampled_rows(const scheduler::StepPlan& plan) const;
    static int mask_threads();
    void collect_step();
    void collect_all();

    // Processes the sequence's next token, whose slot (a placeholder, or the token itself) is
    // tokens[num_tokens_known]: stop ids, detokenizer, matchers, limits, then an event.
    // Sets the grammar's disallowed tokens of `row` to -inf; false when it allows none.
    bool apply_grammar_mask(Sequence& seq, std::span<float> row);
    // `logprobs`: the token's, when the request asked for them (else null).
    void on_token(Sequence& seq, int32_t token, const sampling::TokenLogprobs* logprobs);
    void emit(Sequence& seq, std::vector<int32_t> token_ids, std::string text, FinishReason finish,
              std::vector<sampling::TokenLogprobs> logprobs = {});
    void finish(Sequence& seq, FinishReason reason, std::vector<int32_t> token_ids, std::string text,
                std::vector<sampling::TokenLogprobs> logprobs = {});
    void remove_finished();
    void publish_stats();
    // A step of `features` took `ms`: the scheduler's cost model learns it, misses are counted, the
    // on_step hook sees it.
    void record_step(const scheduler::StepFeatures& features, double itl_target_ms, double ms, double blocked_ms);

    std::unique_ptr<executor::ModelRunner> runner_;
    const tokenizer::Tokenizer& tokenizer_;
    EngineConfig config_;
    kv::BlockManager blocks_;
    scheduler::Scheduler scheduler_;
    RequestQueue queue_;
    std::thread thread_;
    std::atomic<bool> stopping_{false}, draining_{false};
    std::atomic<int> num_waiting_{0};
    std::atomic<double> predicted_wait_ms_{0};
    const bool overlap_;

    // Engine thread only.
    std::vector<std::unique_ptr<Sequence>> seqs_;
    std::unordered_map<uint64_t, Sequence*> by_id_;
    std::vector<float> logits_;                 // [rows, vocab] of the last step, unless ids_step_
    std::vector<int32_t> step_ids_;             // [rows] chosen by the runner when ids_step_
    std::vector<executor::RowSampling> rows_;   // [rows] device sampling parameters (scratch)
    std::vector<float> logprob_row_;            // a host logits row kept from the sampler (scratch)
    bool ids_step_ = false;
    std::deque<InflightStep> inflight_;         // submitted, not collected; at most 2, oldest first
    ThreadPool mask_pool_;                      // grammar masks, the engine thread as worker 0
    std::vector<uint32_t> masks_;               // [masked rows][mask words] (scratch)
    std::vector<int32_t> mask_of_row_;          // [rows]: index into masks_, or -1 (scratch)
    int64_t num_submitted_ = 0;                 // pipelined steps submitted (the next step_no)
    int64_t num_steps_ = 0, num_preemptions_ = 0;
    int64_t itl_target_misses_ = 0, ttft_target_misses_ = 0;
    int64_t graphs_seen_ = 0;                   // the runner's num_graphs_captured() at the last step
    Clock::time_point last_step_end_{};         // pipelined: when the last collected step's ids arrived

    mutable std::mutex stats_mu_;
    EngineStats stats_;
};

}  // namespace hichat::engine
