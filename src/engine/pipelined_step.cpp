// The pipelined engine step (EngineConfig::overlap): the runner computes step N while the engine
// plans and submits step N + 1, whose tokens for step N's sampled rows are placeholders -(row + 1)
// that the runner resolves; then step N's ids are collected and processed.
#include <algorithm>

#include "base/check.h"
#include "engine/engine_impl.h"

namespace hichat::engine {

// One pipelined iteration: step N is in flight (if any). Plans and submits step N + 1 over the
// placeholders of step N, then collects step N. Steps that need host logits (penalties) run
// synchronously, after the pipeline has drained, so no plan ever holds a placeholder they cannot use.
void Engine::Impl::pipelined_step() {
    if (!every_runner_picked()) {
        collect_all();
        remove_finished();
        return sync_step();
    }
    scheduler::StepPlan plan = plan_next(/*pipelined=*/true);
    const bool submitted = !plan.empty();
    if (submitted) submit_step(plan);
    if (inflight_.size() > (submitted ? 1u : 0u)) {
        collect_step();
    } else if (!submitted) {
        publish_stats();
        queue_.wait(std::chrono::milliseconds(20));
        return;
    }
    remove_finished();
    publish_stats();
}

// Decided before planning (over waiting sequences too, which the plan may admit): a plan made over
// placeholders must be submitted, never run synchronously.
bool Engine::Impl::every_runner_picked() const {
    return std::all_of(seqs_.begin(), seqs_.end(), [&](const auto& seq) {
        if (seq->state.status == scheduler::SeqStatus::kFinished) return true;
        if (seq->matcher) return false;  // its mask for step N + 1 needs step N's token: synchronous
        return seq->request.sampling.is_plain_greedy() || (runner_->samples_on_device() && seq->sampler.device_samplable());
    });
}

// Device work runs in submission order, so the KV of this step is there for the next one: each
// chunk counts as cached at once, and each sampling chunk leaves a placeholder for its token.
void Engine::Impl::submit_step(const scheduler::StepPlan& plan) {
    const executor::ForwardBatch batch = build_batch(plan);
    fill_row_sampling(plan);
    runner_->submit(batch, rows_);
    InflightStep step{.step_no = num_submitted_++};
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
        const auto& chunk = plan.chunks[i];
        Sequence& seq = *by_id_.at(chunk.seq->id);
        const bool samples = chunk.samples();
        seq.state.num_tokens_cached += chunk.num_tokens;
        if (!samples) continue;
        const auto row = static_cast<int32_t>(i);
        step.rows.push_back({.seq_id = seq.state.id, .row = row, .token_index = static_cast<int>(seq.tokens.size())});
        seq.tokens.push_back(-(row + 1));
        seq.state.num_tokens++;
        seq.placeholder_step = step.step_no;
    }
    inflight_.push_back(std::move(step));
    CHECK_LE(inflight_.size(), 2u);
    ++num_steps_;
}

// Processes the oldest step in flight. Its rows of sequences that ended meanwhile are ignored.
void Engine::Impl::collect_step() {
    CHECK(!inflight_.empty());
    const InflightStep step = std::move(inflight_.front());
    inflight_.pop_front();
    runner_->collect(step_ids_);
    const std::span<const sampling::TokenLogprobs> logprobs = runner_->step_logprobs();
    for (const InflightStep::SampledRow& r : step.rows) {
        CHECK_LT(static_cast<size_t>(r.row), step_ids_.size()) << "step " << step.step_no;
        auto it = by_id_.find(r.seq_id);
        if (it == by_id_.end() || it->second->state.status == scheduler::SeqStatus::kFinished) continue;
        Sequence& seq = *it->second;
        CHECK_EQ(r.token_index, seq.num_tokens_known) << "sequence " << seq.state.id << ", step " << step.step_no;
        const bool wants = seq.request.num_logprobs >= 0;
        CHECK(!wants || static_cast<size_t>(r.row) < logprobs.size()) << "step " << step.step_no << ": no logprobs";
        on_token(seq, step_ids_[static_cast<size_t>(r.row)], wants ? &logprobs[static_cast<size_t>(r.row)] : nullptr);
    }
}

void Engine::Impl::collect_all() {
    while (!inflight_.empty()) collect_step();
}

}  // namespace hichat::engine
