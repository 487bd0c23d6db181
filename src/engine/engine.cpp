#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "base/check.h"
#include "engine/engine_impl.h"

namespace hichat::engine {

Status EngineConfig::validate() const {
    HICHAT_RETURN_IF_ERROR(scheduler.validate());
    if (max_waiting < 1) return invalid_argument("max_waiting must be >= 1");
    if (max_model_len < 0) return invalid_argument("max_model_len must be >= 0");
    return ok_status();
}

void Engine::Impl::loop() {
    while (!stopping_) {
        if (draining_ && seqs_.empty() && queue_.size() == 0 && inflight_.empty()) break;
        admit_new_requests();
        apply_cancellations_and_deadlines();
        if (overlap_) {
            pipelined_step();
        } else {
            sync_step();
        }
    }
    collect_all();
    for (auto& seq : seqs_) finish(*seq, FinishReason::kCancelled, {}, {});
    remove_finished();
    publish_stats();
}

scheduler::StepPlan Engine::Impl::plan_next(bool pipelined) {
    std::vector<scheduler::SeqState*> states;
    for (auto& seq : seqs_) {
        if (seq->state.status == scheduler::SeqStatus::kFinished) continue;
        const int num_generated_with_inflight = static_cast<int>(seq->tokens.size()) - seq->num_prompt_tokens();
        const bool ends_in_flight = seq->num_placeholders() > 0 &&
                                    (num_generated_with_inflight >= seq->request.max_tokens ||
                                     seq->state.num_tokens >= max_context_tokens());
        if (pipelined && ends_in_flight) continue;
        states.push_back(&seq->state);
    }
    scheduler::StepPlan plan = scheduler_.schedule(states, Clock::now());
    num_preemptions_ += static_cast<int64_t>(plan.preempted.size());
    if (!plan.copies.empty()) runner_->copy_kv_blocks(plan.copies);
    return plan;
}

// One synchronous iteration: plan, run the model, sample and stream.
void Engine::Impl::sync_step() {
    scheduler::StepPlan plan = plan_next(/*pipelined=*/false);
    if (plan.empty()) {
#ifndef NDEBUG
        if (seqs_.empty()) {  // idle: the whole pool is free or cached
            blocks_.check_invariants();
            CHECK_EQ(blocks_.num_blocks_used(), 0) << "KV blocks held with no sequence left";
        }
#endif
        publish_stats();
        queue_.wait(std::chrono::milliseconds(20));
        return;
    }
    const executor::ForwardBatch batch = build_batch(plan);
    const scheduler::StepFeatures features = scheduler::plan_features(plan);
    const Clock::time_point start = Clock::now();
    run_forward(plan, batch);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    record_step(features, plan.itl_target_ms, ms, ms);
    ++num_steps_;
    commit(plan, batch);
    remove_finished();
    publish_stats();
}

// Logprobs are computed where the ids are picked: by the runner for device-sampled rows, here from the
// host logits otherwise (commit), so an all-greedy step that wants them leaves the argmax shortcut.
// Prompt logprobs and requests of no tokens always take the host logits.
void Engine::Impl::run_forward(const scheduler::StepPlan& plan, const executor::ForwardBatch& batch) {
    auto seq_of = [&](const scheduler::ScheduledChunk& c) -> Sequence& { return *by_id_.at(c.seq->id); };
    if (std::any_of(plan.chunks.begin(), plan.chunks.end(), [&](const auto& c) { return seq_of(c).runs_on_host_logits(); })) {
        ids_step_ = false;
        return runner_->forward(batch, logits_);
    }
    const bool all_greedy = std::all_of(plan.chunks.begin(), plan.chunks.end(), [&](const auto& c) {
        return seq_of(c).request.sampling.is_plain_greedy() && !seq_of(c).matcher;
    });
    const bool logprobs = std::any_of(plan.chunks.begin(), plan.chunks.end(), [&](const auto& c) {
        return c.samples() && seq_of(c).request.num_logprobs >= 0;
    });
    const bool on_device = (!all_greedy || logprobs) && runner_->samples_on_device() &&
                           std::all_of(plan.chunks.begin(), plan.chunks.end(), [&](const auto& c) {
                               return seq_of(c).sampler.device_samplable();
                           });
    ids_step_ = (all_greedy && !logprobs) || on_device;
    if (all_greedy && !logprobs) return runner_->forward_argmax(batch, step_ids_);
    if (!on_device) return runner_->forward(batch, logits_);
    fill_row_sampling(plan);
    if (!device_masked(plan)) return runner_->forward_sample(batch, rows_, step_ids_);
    runner_->submit_forward(batch, rows_);  // the masks are computed while the forward pass runs
    pick_masked(sampled_rows(plan), plan.chunks.size());
    runner_->collect(step_ids_);
}

// One row per chunk (build_batch asks for the last token's logits only); a chunk that does not
// sample (a prefill piece) takes the argmax and its id is ignored.
void Engine::Impl::fill_row_sampling(const scheduler::StepPlan& plan) {
    rows_.clear();
    for (const auto& c : plan.chunks) {
        Sequence& seq = *by_id_.at(c.seq->id);
        const sampling::SamplingParams& p = seq.request.sampling;
        const int num_logprobs = c.samples() ? seq.request.num_logprobs : -1;
        if (!c.samples() || p.is_greedy()) {
            rows_.push_back({.num_logprobs = num_logprobs});
            continue;
        }
        rows_.push_back({.temperature = p.temperature,
                         .top_k = p.top_k,
                         .top_p = p.top_p,
                         .min_p = p.min_p,
                         .u = std::min(static_cast<float>(seq.sampler.next_unit()), 0x1.fffffep-1f),
                         .num_logprobs = num_logprobs});
    }
}

void Engine::Impl::admit_new_requests() {
    std::vector<Request> requests;
    std::vector<RequestId> cancelled;
    queue_.drain(requests, cancelled);
    for (Request& r : requests) {
        auto seq = std::make_unique<Sequence>(std::move(r), tokenizer_, config_.output_deny_list);
        if (blocks_.prefix_caching() && seq->caches_prefix()) seq->extend_block_keys(blocks_.block_size_tokens());
        if (seq->request.num_prompt_logprobs >= 0) seq->prompt_logprobs.resize(seq->request.prompt.size());
        // The API validates lengths; a request that still cannot fit ends at once instead of waiting forever.
        if (seq->num_prompt_tokens() == 0 || seq->num_prompt_tokens() >= max_context_tokens()) {
            finish(*seq, FinishReason::kLength, {}, {});
        }
        by_id_[seq->state.id] = seq.get();
        seqs_.push_back(std::move(seq));
    }
    // After adding: a cancel may refer to a request drained in the same batch.
    for (RequestId id : cancelled) {
        if (auto it = by_id_.find(id.value); it != by_id_.end()) finish(*it->second, FinishReason::kCancelled, {}, {});
    }
}

void Engine::Impl::apply_cancellations_and_deadlines() {
    const auto now = Clock::now();
    for (auto& seq : seqs_) {
        if (seq->state.status != scheduler::SeqStatus::kFinished && now >= seq->request.deadline) {
            finish(*seq, FinishReason::kDeadline, {}, {});
        }
    }
    remove_finished();
}

executor::ForwardBatch Engine::Impl::build_batch(const scheduler::StepPlan& plan) {
    executor::ForwardBatch batch;
    for (const auto& chunk : plan.chunks) {
        Sequence& seq = *by_id_.at(chunk.seq->id);
        // Placeholders of older steps were resolved at their collect, before this plan was made: the
        // runner can resolve only the previous step's.
        CHECK_LE(seq.num_placeholders(), 1) << "sequence " << seq.state.id;
        if (seq.num_placeholders() == 1 && chunk.samples()) {
            CHECK_EQ(seq.placeholder_step, num_submitted_ - 1) << "sequence " << seq.state.id;
        }
        const auto begin = static_cast<size_t>(seq.state.num_tokens_cached);
        batch.seqs.push_back({.block_table = seq.state.blocks.blocks,
                              .pos0 = seq.state.num_tokens_cached,
                              .tokens = std::span<const int32_t>(seq.tokens).subspan(begin, chunk.num_tokens),
                              .all_logits = seq.needs_prompt_logits()});
    }
    return batch;
}

void Engine::Impl::commit(const scheduler::StepPlan& plan, const executor::ForwardBatch& batch) {
    const auto vocab = static_cast<size_t>(runner_->model_config().vocab_size);
    size_t next_row = 0;  // a chunk has one logit row, or one per token (all_logits)
    for (size_t i = 0; i < plan.chunks.size(); ++i) {
        const auto& chunk = plan.chunks[i];
        Sequence& seq = *by_id_.at(chunk.seq->id);
        const bool samples = chunk.samples();
        const size_t first_row = next_row;
        next_row += batch.seqs[i].all_logits ? static_cast<size_t>(chunk.num_tokens) : 1;
        if (batch.seqs[i].all_logits) {
            CHECK(!ids_step_);
            record_prompt_logprobs(seq, std::span<const float>(logits_).subspan(first_row * vocab, chunk.num_tokens * vocab));
        }
        const size_t i_row = next_row - 1;  // the chunk's last token: its logits give the next token
        seq.state.num_tokens_cached += chunk.num_tokens;
        if (!samples || seq.state.status == scheduler::SeqStatus::kFinished) continue;
        if (seq.request.max_tokens == 0) {
            finish(seq, FinishReason::kLength, {}, {});  // the prompt only
            continue;
        }
        int32_t token = 0;
        std::optional<sampling::TokenLogprobs> logprobs;
        const int num_logprobs = seq.request.num_logprobs;
        if (ids_step_) {
            token = step_ids_[i_row];
            if (num_logprobs >= 0) logprobs = runner_->step_logprobs()[i_row];
        } else {
            std::span<float> row(logits_.data() + i_row * vocab, vocab);
            if (seq.matcher && !apply_grammar_mask(seq, row)) {
                finish(seq, FinishReason::kStop, {}, {});  // no token can follow (a complete match)
                continue;
            }
            if (num_logprobs >= 0) logprob_row_.assign(row.begin(), row.end());  // the sampler changes row
            token = seq.sampler.sample(row, seq.request.prompt, seq.generated());
            if (num_logprobs >= 0) logprobs = sampling::compute_logprobs(logprob_row_, token, num_logprobs);
        }
        seq.tokens.push_back(token);
        seq.state.num_tokens++;
        on_token(seq, token, logprobs ? &*logprobs : nullptr);
    }
}

// Row j of `rows` holds the logits after the chunk's token j, at position num_tokens_cached + j: the
// distribution of prompt token num_tokens_cached + j + 1.
void Engine::Impl::record_prompt_logprobs(Sequence& seq, std::span<const float> rows) {
    const auto vocab = static_cast<size_t>(runner_->model_config().vocab_size);
    const int first = seq.state.num_tokens_cached;
    for (size_t j = 0; (j + 1) * vocab <= rows.size(); ++j) {
        const int target = first + static_cast<int>(j) + 1;
        if (target >= seq.num_prompt_tokens()) break;
        seq.prompt_logprobs[static_cast<size_t>(target)] = sampling::compute_logprobs(
            rows.subspan(j * vocab, vocab), seq.tokens[static_cast<size_t>(target)], seq.request.num_prompt_logprobs);
    }
}

// Disallowed tokens get -inf; false when the grammar allows no token at all.
bool Engine::Impl::apply_grammar_mask(Sequence& seq, std::span<float> row) {
    seq.mask.assign(seq.matcher->tokenizer().mask_words(), 0);
    seq.matcher->fill_next_token_bitmask(seq.mask);
    bool any = false;
    for (size_t i = 0; i < row.size(); ++i) {
        const bool allowed = i / 32 < seq.mask.size() && (seq.mask[i / 32] >> (i % 32) & 1u);
        if (!allowed) row[i] = -std::numeric_limits<float>::infinity();
        any |= allowed;
    }
    return any;
}

void Engine::Impl::on_token(Sequence& seq, int32_t token, const sampling::TokenLogprobs* logprobs) {
    const int at = seq.num_tokens_known;
    // The mask allowed it (sampled from a masked row), so this only fails on a grammar bug.
    if (seq.matcher) CHECK(seq.matcher->accept_token(token)) << "sequence " << seq.state.id << ": token " << token;
    CHECK_LT(at, static_cast<int>(seq.tokens.size())) << "sequence " << seq.state.id;
    if (seq.first_token_time == Clock::time_point{}) {
        seq.first_token_time = Clock::now();
        const double target = scheduler_.targets_of(seq.state).ttft_ms;
        const double ttft = std::chrono::duration<double, std::milli>(seq.first_token_time - seq.request.arrival).count();
        if (target > 0 && ttft > target) ++ttft_target_misses_;
    }
    const auto& stop_ids = seq.request.stop_token_ids;
    if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
        seq.truncate(at);  // a stop id is not part of the output
        return finish(seq, FinishReason::kStop, {}, {});
    }
    seq.tokens[static_cast<size_t>(at)] = token;
    seq.num_tokens_known++;
    if (blocks_.prefix_caching() && seq.caches_prefix()) seq.extend_block_keys(blocks_.block_size_tokens());
    bool stopped = false, filtered = false;
    std::string text = seq.stop_matcher.push(seq.detokenizer.push(token), stopped);
    text = seq.filter_matcher.push(text, filtered);
    FinishReason reason = FinishReason::kNone;
    if (filtered) {
        reason = FinishReason::kContentFilter;
    } else if (stopped) {
        reason = FinishReason::kStop;
    } else if (seq.matcher && seq.matcher->is_terminated()) {
        reason = FinishReason::kStop;  // the grammar's match is complete and nothing may follow
    } else if (seq.num_generated_tokens() >= seq.request.max_tokens || seq.num_tokens_known >= max_context_tokens()) {
        reason = FinishReason::kLength;
    }
    std::vector<sampling::TokenLogprobs> token_logprobs;
    if (logprobs != nullptr) token_logprobs.push_back(*logprobs);
    if (reason == FinishReason::kNone) {
        return emit(seq, {token}, std::move(text), FinishReason::kNone, std::move(token_logprobs));
    }
    seq.truncate(seq.num_tokens_known);  // placeholders of a step in flight: its row is ignored
    finish(seq, reason, {token}, std::move(text), std::move(token_logprobs));
}

void Engine::Impl::emit(Sequence& seq, std::vector<int32_t> token_ids, std::string text, FinishReason finish,
                        std::vector<sampling::TokenLogprobs> logprobs) {
    TokenEvent ev;
    ev.token_ids = std::move(token_ids);
    ev.logprobs = std::move(logprobs);
    ev.text = std::move(text);
    ev.finish = finish;
    ev.num_prompt_tokens = seq.num_prompt_tokens();
    if (seq.request.num_prompt_logprobs >= 0 && !seq.prompt_logprobs_sent &&
        seq.state.num_tokens_cached >= seq.num_prompt_tokens()) {
        ev.prompt_logprobs.assign(std::make_move_iterator(seq.prompt_logprobs.begin() + 1),
                                  std::make_move_iterator(seq.prompt_logprobs.end()));
        seq.prompt_logprobs_sent = true;
    }
    ev.num_generated_tokens = seq.num_generated_tokens();
    ev.num_cached_tokens = std::max(seq.state.num_prefix_hit_tokens, 0);
    if (seq.first_token_time != Clock::time_point{}) {
        ev.ttft_ms = std::chrono::duration<double, std::milli>(seq.first_token_time - seq.request.arrival).count();
    }
    if (seq.request.sink) seq.request.sink->on_event(std::move(ev));
}

// Ends a sequence: natural ends (stop token, length) flush the held-back text through the matchers,
// which may still find a stop string or a filtered phrase in it.
void Engine::Impl::finish(Sequence& seq, FinishReason reason, std::vector<int32_t> token_ids, std::string text,
                          std::vector<sampling::TokenLogprobs> logprobs) {
    if (seq.state.status == scheduler::SeqStatus::kFinished) return;
    if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
        bool stopped = false, filtered = false;
        std::string tail = seq.stop_matcher.push(seq.detokenizer.flush(), stopped);
        if (!stopped) tail += seq.stop_matcher.flush();
        std::string out = seq.filter_matcher.push(tail, filtered);
        if (!filtered) out += seq.filter_matcher.flush();
        text += out;
        if (filtered) reason = FinishReason::kContentFilter;
        else if (stopped) reason = FinishReason::kStop;
    }
    scheduler_.release(seq.state);
    emit(seq, std::move(token_ids), std::move(text), reason, std::move(logprobs));
}

void Engine::Impl::remove_finished() {
    std::erase_if(seqs_, [&](const std::unique_ptr<Sequence>& s) {
        if (s->state.status != scheduler::SeqStatus::kFinished) return false;
        by_id_.erase(s->state.id);
        return true;
    });
}

void Engine::Impl::record_step(const scheduler::StepFeatures& features, double itl_target_ms, double ms,
                               double blocked_ms) {
    const scheduler::StepCostModel& cost = scheduler_.cost_model();
    const double predicted_ms = cost.ready() ? cost.predict_ms(features) : 0.0;
    scheduler_.observe_step(features, ms);
    const int64_t graphs = runner_->num_graphs_captured();
    if (itl_target_ms > 0 && features.decode_rows > 0 && ms > itl_target_ms) ++itl_target_misses_;
    if (config_.on_step) {
        config_.on_step({.ms = ms,
                         .prefill_tokens = static_cast<int>(features.prefill_tokens),
                         .decode_rows = static_cast<int>(features.decode_rows),
                         .itl_target_ms = itl_target_ms,
                         .predicted_ms = predicted_ms,
                         .blocked_ms = blocked_ms,
                         .decode_keys = features.decode_keys,
                         .graphs_captured = static_cast<int>(graphs - graphs_seen_)});
    }
    graphs_seen_ = graphs;
}

void Engine::Impl::publish_stats() {
    EngineStats s;
    scheduler::StepFeatures decodes;
    for (const auto& seq : seqs_) {
        const scheduler::SeqState& st = seq->state;
        s.num_waiting += st.status == scheduler::SeqStatus::kWaiting;
        s.num_running += st.status == scheduler::SeqStatus::kRunning;
        if (st.status == scheduler::SeqStatus::kWaiting) s.waiting_prompt_tokens += st.num_tokens - st.num_tokens_cached;
        if (st.status == scheduler::SeqStatus::kRunning) decodes += scheduler::chunk_features(st.num_tokens_cached, 1);
    }
    s.predicted_wait_ms = scheduler_.predict_prefill_ms(s.waiting_prompt_tokens, decodes);
    predicted_wait_ms_ = s.predicted_wait_ms;
    s.num_kv_blocks_total = blocks_.num_blocks_total();
    s.num_kv_blocks_used = blocks_.num_blocks_used();
    s.num_kv_blocks_free = blocks_.num_blocks_free();
    s.num_kv_blocks_cached = blocks_.num_blocks_cached();
    s.prefix_cache_evictions = blocks_.counters().evictions;
    s.num_host_kv_blocks_total = blocks_.host_tier().num_slots();
    s.num_host_kv_blocks_used = blocks_.host_tier().num_used();
    s.host_kv_offloaded = blocks_.counters().offloaded;
    s.host_kv_restored = blocks_.counters().restored;
    s.host_kv_dropped = blocks_.host_tier().num_dropped();
    s.prefix_cache = scheduler_.prefix_cache_stats();
    s.num_steps = num_steps_;
    s.num_preemptions = num_preemptions_;
    s.itl_target_misses = itl_target_misses_;
    s.ttft_target_misses = ttft_target_misses_;
    num_waiting_ = s.num_waiting;
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_ = s;
}

Engine::Engine(std::unique_ptr<executor::ModelRunner> runner, const tokenizer::Tokenizer& tokenizer,
               const EngineConfig& config)
    : impl_(std::make_unique<Impl>(std::move(runner), tokenizer, config)) {}
Engine::~Engine() = default;
Engine::Admission Engine::submit(Request request) { return impl_->submit(std::move(request)); }
Engine::Admission Engine::submit(std::vector<Request> requests) { return impl_->submit(std::move(requests)); }
void Engine::cancel(RequestId id) { impl_->cancel(id); }
EngineStats Engine::stats() const { return impl_->stats(); }
double Engine::predicted_wait_ms() const { return impl_->predicted_wait_ms(); }
int Engine::retry_after_s() const {
    return static_cast<int>(std::clamp(std::ceil(impl_->predicted_wait_ms() / 1000.0), 1.0, 3600.0));
}
int Engine::max_context_tokens() const { return impl_->max_context_tokens(); }
const model::ModelConfig& Engine::model_config() const { return impl_->model_config(); }
void Engine::drain_and_stop() { impl_->drain_and_stop(); }

}  // namespace hichat::engine
