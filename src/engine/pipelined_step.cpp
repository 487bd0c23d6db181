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
    const bool masked = submitted && device_masked(plan);
    if (submitted) submit_step(plan, masked);
    if (inflight_.size() > (submitted ? 1u : 0u)) {
        collect_step();
    } else if (!submitted) {
        publish_stats();
        queue_.wait(std::chrono::milliseconds(20));
        return;
    }
    // Step N + 1's masks follow from step N's tokens, collected just now, while N + 1's forward runs.
    if (masked) pick_masked(inflight_.back().rows, plan.chunks.size());
    remove_finished();
    publish_stats();
}

// Decided before planning (over waiting sequences too, which the plan may admit): a plan made over
// placeholders must be submitted, never run synchronously.
bool Engine::Impl::every_runner_picked() const {
    return std::all_of(seqs_.begin(), seqs_.end(), [&](const auto& seq) {
        if (seq->state.status == scheduler::SeqStatus::kFinished) return true;
        // A grammar row is picked on the device with its mask (pick_masked), never by the host argmax.
        const bool on_device = runner_->samples_on_device() && seq->sampler.device_samplable();
        if (seq->runs_on_host_logits()) return false;
        return on_device || (!seq->matcher && seq->request.sampling.is_plain_greedy());
    });
}

// Device work runs in submission order, so the KV of this step is there for the next one: each
// chunk counts as cached at once, and each sampling chunk leaves a placeholder for its token.
void Engine::Impl::submit_step(const scheduler::StepPlan& plan, bool masked) {
    const executor::ForwardBatch batch = build_batch(plan);
    const scheduler::StepFeatures features = scheduler::plan_features(plan);   // before the chunks count as cached
    fill_row_sampling(plan);
    if (masked) {
        runner_->submit_forward(batch, rows_);
    } else {
        runner_->submit(batch, rows_);
    }
    InflightStep step{.step_no = num_submitted_++,
                      .features = features,
                      .itl_target_ms = plan.itl_target_ms,
                      .submitted = Clock::now()};
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
    const Clock::time_point collecting = Clock::now();
    runner_->collect(step_ids_);
    // The step ran from when it was submitted or when the one before it ended, whichever came later.
    const Clock::time_point end = Clock::now();
    record_step(step.features, step.itl_target_ms,
                std::chrono::duration<double, std::milli>(end - std::max(step.submitted, last_step_end_)).count(),
                std::chrono::duration<double, std::milli>(end - collecting).count());
    last_step_end_ = end;
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

bool Engine::Impl::device_masked(const scheduler::StepPlan& plan) const {
    if (!runner_->samples_on_device()) return false;
    return std::any_of(plan.chunks.begin(), plan.chunks.end(),
                       [&](const scheduler::ScheduledChunk& c) { return c.samples() && by_id_.at(c.seq->id)->matcher; });
}

int Engine::Impl::mask_threads() {
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u));
}

std::vector<InflightStep::SampledRow> Engine::Impl::sampled_rows(const scheduler::StepPlan& plan) const {
    std::vector<InflightStep::SampledRow> rows;
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
        if (plan.chunks[i].samples()) rows.push_back({.seq_id = plan.chunks[i].seq->id, .row = static_cast<int32_t>(i)});
    }
    return rows;
}

void Engine::Impl::pick_masked(std::span<const InflightStep::SampledRow> rows, size_t num_rows) {
    std::vector<Sequence*> masked;
    mask_of_row_.assign(num_rows, -1);
    for (const InflightStep::SampledRow& r : rows) {
        auto it = by_id_.find(r.seq_id);
        if (it == by_id_.end()) continue;
        Sequence& seq = *it->second;
        if (!seq.matcher || seq.state.status == scheduler::SeqStatus::kFinished) continue;
        mask_of_row_[static_cast<size_t>(r.row)] = static_cast<int32_t>(masked.size());
        masked.push_back(&seq);
    }
    const size_t words = (static_cast<size_t>(runner_->model_config().vocab_size) + 31) / 32;
    masks_.resize(masked.size() * words);
    std::vector<uint8_t> empty(masked.size(), 0);
    mask_pool_.parallel_for(static_cast<int64_t>(masked.size()), [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
            const std::span<uint32_t> bits(masks_.data() + static_cast<size_t>(k) * words, words);
            masked[static_cast<size_t>(k)]->matcher->fill_next_token_bitmask(bits);
            empty[static_cast<size_t>(k)] = std::all_of(bits.begin(), bits.end(), [](uint32_t w) { return w == 0; });
        }
    });
    for (size_t i = 0; i < mask_of_row_.size(); ++i) {
        const int32_t k = mask_of_row_[i];
        if (k < 0 || !empty[static_cast<size_t>(k)]) continue;
        Sequence& seq = *masked[static_cast<size_t>(k)];
        seq.truncate(seq.num_tokens_known);  // its row in this step is ignored
        finish(seq, FinishReason::kStop, {}, {});  // no token can follow (a complete match)
        mask_of_row_[i] = -1;
    }
    runner_->pick(masks_, static_cast<int>(words), mask_of_row_);
}

void Engine::Impl::collect_all() {
    while (!inflight_.empty()) collect_step();
}

}  // namespace hichat::engine
