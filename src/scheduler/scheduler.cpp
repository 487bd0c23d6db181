#include "scheduler/scheduler.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>

#include "base/check.h"

namespace hichat::scheduler {
namespace {

// Steps are planned to at most this share of the ITL target, and to less when the cost model's slow
// steps run over it by more (target / StepCostModel::slow_ratio(), its 90th percentile): on the CPU with models/default,
// planning to the full target put about a third of the steps 5-10% over; on the H100 (8B, 256
// streams, --target-itl-ms 25) planning to 0.9 still left 5% of the steps over 25 ms.
constexpr double kTargetHeadroom = 0.9;
// Until the cost model is ready, a step that decodes under an ITL target takes at most this share of
// the token budget in prefill: the model learns from small mixed steps instead of the whole budget's
// (on the H100, 8B, the first wave of 256 streams made three 8192-token steps of 186-189 ms beside
// decodes before the model was ready).
constexpr int kColdBudgetShare = 32;

}  // namespace

Status SchedulerConfig::validate() const {
    if (max_num_seqs < 1) return invalid_argument("max_num_seqs must be >= 1");
    if (max_num_tokens_per_step < max_num_seqs) {
        return invalid_argument("max_num_tokens_per_step (" + std::to_string(max_num_tokens_per_step) +
                                ") must be >= max_num_seqs (" + std::to_string(max_num_seqs) + ")");
    }
    if (prefill_chunk_tokens < 1) return invalid_argument("prefill_chunk_tokens must be >= 1");
    if (!(priority_aging_per_s >= 0)) return invalid_argument("priority_aging_per_s must be >= 0");
    if (!(target_itl_ms >= 0)) return invalid_argument("target_itl_ms must be >= 0");
    if (!(target_ttft_ms >= 0)) return invalid_argument("target_ttft_ms must be >= 0");
    if (min_prefill_tokens_per_step < 1) return invalid_argument("min_prefill_tokens_per_step must be >= 1");
    if (background_prefill_tokens_per_step < 1) return invalid_argument("background_prefill_tokens_per_step must be >= 1");
    for (const OwnerWeight& w : owner_weights) {
        if (!(w.weight > 0)) return invalid_argument("owner weights must be > 0");
    }
    if (!(fair_share_half_life_s > 0)) return invalid_argument("fair_share_half_life_s must be > 0");
    for (size_t i = 0; i < priority_targets.size(); ++i) {
        const PriorityTargets& t = priority_targets[i];
        if (!(t.itl_ms >= 0) || !(t.ttft_ms >= 0)) return invalid_argument("priority targets must be >= 0");
        if (i > 0 && t.max_priority <= priority_targets[i - 1].max_priority)
            return invalid_argument("priority targets must be in ascending priority order, each priority once");
    }
    return ok_status();
}

uint64_t owner_id(std::string_view name) {
    if (name.empty()) return 0;
    uint64_t h = 0xcbf29ce484222325ull;   // FNV-1a
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    return h == 0 ? 1 : h;
}

Scheduler::Scheduler(const SchedulerConfig& config, kv::BlockManager& blocks) : config_(config), blocks_(blocks) {}

double Scheduler::effective_priority(const SeqState& s, std::chrono::steady_clock::time_point now) const {
    const double waited_s = std::chrono::duration<double>(now - s.arrival).count();
    return s.priority - config_.priority_aging_per_s * waited_s;
}

StepPlan Scheduler::schedule(const std::vector<SeqState*>& seqs, std::chrono::steady_clock::time_point now) {
    std::vector<SeqState*> running, waiting;
    for (SeqState* s : seqs) {
        if (s->status == SeqStatus::kRunning) running.push_back(s);
        if (s->status == SeqStatus::kWaiting) waiting.push_back(s);
    }
    std::sort(running.begin(), running.end(),
              [](const SeqState* a, const SeqState* b) { return a->admission_order < b->admission_order; });
    decay_service(now);
    // Blocks filled (and their tokens known) since the last step join the cache now, so that
    // sequences admitted below can share them.
    for (SeqState* s : running) blocks_.cache_full_blocks(s->blocks, s->block_keys, s->num_tokens_cached);
    StepPlan plan;
    int budget = config_.max_num_tokens_per_step;
    load_ = {};
    // Background prefill: none while a more urgent sequence waits or prefills, its share while they
    // only decode, everything when there are none.
    bool urgent_decodes = false, urgent_prefills = false;
    for (const SeqState* s : seqs) {
        if (background(*s)) continue;
        urgent_prefills |= s->status == SeqStatus::kWaiting ||
                           (s->status == SeqStatus::kRunning && s->num_tokens - s->num_tokens_cached > 1);
        urgent_decodes |= s->status == SeqStatus::kRunning;
    }
    load_.background_left = urgent_prefills ? 0 : urgent_decodes ? config_.background_prefill_tokens_per_step : budget;
    schedule_running(running, plan, budget, now);
    int num_running = 0;
    for (const SeqState* s : running) num_running += s->status == SeqStatus::kRunning;
    admit_waiting(waiting, running, num_running, plan, budget, now);
    plan.copies = blocks_.take_copies();
    plan.itl_target_ms = load_.itl_ms;
    charge(plan);
    return plan;
}

// Decodes first (one token each), then continues prefills, oldest admission first (as many tokens
// as the latency targets allow, which the decodes' load sets).
void Scheduler::schedule_running(std::vector<SeqState*>& running, StepPlan& plan, int& budget,
                                 std::chrono::steady_clock::time_point now) {
    for (int pass = 0; pass < 2; ++pass) {
        const bool decode_pass = pass == 0;
        for (SeqState* seq : running) {
            if (seq->status != SeqStatus::kRunning || budget <= 0) continue;
            const int remaining = seq->num_tokens - seq->num_tokens_cached;
            CHECK_GT(remaining, 0) << "sequence " << seq->id;
            if ((remaining == 1) != decode_pass) continue;
            int n = std::min({remaining, config_.prefill_chunk_tokens, budget});
            if (!decode_pass) n = prefill_allowed(*seq, background_allowed(*seq, n), now);
            if (n == 0) continue;   // held back this step by the ITL target; keeps its KV
            bool have_kv = true;
            while (!blocks_.grow(seq->blocks, seq->num_tokens_cached + n)) {
                if (!preempt_one(running, seq, plan, budget)) {
                    have_kv = false;
                    break;
                }
            }
            if (!have_kv) {  // nothing else to evict: this one waits, with its KV freed
                preempt(*seq, plan);
                continue;
            }
            CHECK(blocks_.writable(seq->blocks, seq->num_tokens_cached, seq->num_tokens_cached + n))
                << "sequence " << seq->id << " would write a block another sequence holds";
            add_to_load(*seq, n);
            plan.chunks.push_back({seq, n});
            budget -= n;
        }
    }
}

double Scheduler::predict_prefill_ms(int64_t waiting_tokens, const StepFeatures& decodes) const {
    if (!cost_.ready() || waiting_tokens <= 0) return 0;
    const int64_t budget = std::max(1, config_.max_num_tokens_per_step);
    const int64_t steps = (waiting_tokens + budget - 1) / budget;
    StepFeatures step = decodes;
    step.prefill_tokens += static_cast<double>(std::min(waiting_tokens, budget));
    return static_cast<double>(steps) * cost_.predict_ms(step);
}

int Scheduler::cold_prefill_tokens(int n_max) const {
    const int share = std::max(1, config_.max_num_tokens_per_step / kColdBudgetShare);
    return std::clamp(share - load_.prefill_granted, 0, n_max);
}

double Scheduler::planned_ms(double target_ms) const {
    return std::min(kTargetHeadroom, 1.0 / cost_.slow_ratio()) * target_ms;
}

bool Scheduler::targets_on() const {
    return config_.target_itl_ms > 0 || config_.target_ttft_ms > 0 || !config_.priority_targets.empty();
}

PriorityTargets Scheduler::targets_of(const SeqState& s) const {
    for (const PriorityTargets& t : config_.priority_targets) {
        if (s.priority <= t.max_priority) return t;
    }
    return {.max_priority = s.priority, .itl_ms = config_.target_itl_ms, .ttft_ms = config_.target_ttft_ms};
}

void Scheduler::add_to_load(const SeqState& seq, int num_tokens) {
    load_.features += chunk_features(seq.num_tokens_cached, num_tokens);
    if (seq.num_tokens - seq.num_tokens_cached != 1) {
        load_.prefill_granted += num_tokens;
        if (background(seq)) load_.background_left -= num_tokens;
        return;
    }
    const double itl = targets_of(seq).itl_ms;
    if (itl > 0) load_.itl_ms = load_.itl_ms > 0 ? std::min(load_.itl_ms, itl) : itl;
}

int Scheduler::prefill_allowed(const SeqState& seq, int n_max, std::chrono::steady_clock::time_point now) const {
    if (!targets_on() || load_.itl_ms <= 0 || n_max <= 0) return n_max;
    const int floor = std::min(n_max, std::max(0, config_.min_prefill_tokens_per_step - load_.prefill_granted));
    const int n = std::max(cost_.ready() ? largest_chunk_within_target(seq, n_max) : cold_prefill_tokens(n_max), floor);
    return ttft_at_risk(seq, n, now) ? n_max : n;
}

int Scheduler::largest_chunk_within_target(const SeqState& seq, int n_max) const {
    // The prediction grows with the chunk.
    auto step_ms = [&](int n) {
        StepFeatures f = load_.features;
        f += chunk_features(seq.num_tokens_cached, n);
        return cost_.predict_ms(f);
    };
    int lo = 0, hi = n_max;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (step_ms(mid) <= planned_ms(load_.itl_ms)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

bool Scheduler::ttft_at_risk(const SeqState& seq, int n_capped, std::chrono::steady_clock::time_point now) const {
    const double ttft = targets_of(seq).ttft_ms;
    if (ttft <= 0 || seq.preempted) return false;
    const int remaining = seq.num_tokens - seq.num_tokens_cached;
    const double waited_ms = std::chrono::duration<double, std::milli>(now - seq.arrival).count();
    const int per_step = std::max({n_capped, config_.min_prefill_tokens_per_step, 1});
    const double steps = std::ceil(static_cast<double>(remaining) / per_step);
    const double step_ms = load_.itl_ms > 0 ? load_.itl_ms : cost_.predict_ms(load_.features);
    return waited_ms + steps * step_ms > ttft;
}

bool Scheduler::admission_fits(const SeqState& seq, std::chrono::steady_clock::time_point now) const {
    if (!targets_on() || !cost_.ready()) return true;
    double itl = load_.itl_ms;
    const double own = targets_of(seq).itl_ms;
    if (own > 0) itl = itl > 0 ? std::min(itl, own) : own;
    if (itl <= 0) return true;
    // The decodes of the steps after this one: today's, plus this sequence's.
    StepFeatures decodes{.decode_rows = load_.features.decode_rows, .decode_keys = load_.features.decode_keys};
    decodes += chunk_features(seq.num_tokens, 1);
    return cost_.predict_ms(decodes) <= planned_ms(itl) || ttft_at_risk(seq, 0, now);
}

bool Scheduler::preempt_one(std::vector<SeqState*>& running, const SeqState* keep, StepPlan& plan, int& budget) {
    SeqState* victim = nullptr;
    for (SeqState* s : running) {
        if (s == keep || s->status != SeqStatus::kRunning) continue;
        // Least urgent (highest priority value), then newest.
        if (victim == nullptr || s->priority > victim->priority ||
            (s->priority == victim->priority && s->admission_order > victim->admission_order)) {
            victim = s;
        }
    }
    if (victim == nullptr) return false;
    std::erase_if(plan.chunks, [&](const ScheduledChunk& c) {
        if (c.seq == victim) budget += c.num_tokens;
        return c.seq == victim;
    });
    preempt(*victim, plan);
    return true;
}

void Scheduler::preempt(SeqState& seq, StepPlan& plan) {
    blocks_.cache_full_blocks(seq.blocks, seq.block_keys, seq.num_tokens_cached);
    blocks_.release(seq.blocks);
    seq.num_tokens_cached = 0;
    seq.status = SeqStatus::kWaiting;
    seq.preempted = true;
    plan.preempted.push_back(&seq);
}

bool Scheduler::allocate_for_admission(SeqState& seq, int reserve) {
    CHECK(seq.blocks.blocks.empty()) << "sequence " << seq.id << " waits holding KV";
    const int bs = blocks_.block_size_tokens();
    const std::vector<kv::PrefixBlock> hit = blocks_.find_cached_prefix(seq.block_keys, (seq.num_tokens - 1) / bs);
    const int hit_blocks = static_cast<int>(hit.size());
    const int needed = blocks_.num_blocks_for(seq.num_tokens) - hit_blocks + blocks_.num_free_blocks_taken(hit);
    if (blocks_.num_blocks_free() - needed < reserve) return false;
    blocks_.acquire_cached(seq.blocks, hit, seq.block_keys);
    CHECK(blocks_.grow(seq.blocks, seq.num_tokens));
    seq.num_tokens_cached = hit_blocks * bs;
    const int host_hit_tokens =
        bs * static_cast<int>(std::count_if(hit.begin(), hit.end(), [](const kv::PrefixBlock& p) { return p.block < 0; }));
    if (seq.preempted) {
        prefix_stats_.preempted_queried_tokens += seq.num_tokens;
        prefix_stats_.preempted_hit_tokens += seq.num_tokens_cached;
    } else if (blocks_.prefix_caching()) {
        prefix_stats_.queried_tokens += seq.num_tokens;
        prefix_stats_.hit_tokens += seq.num_tokens_cached;
        prefix_stats_.host_hit_tokens += host_hit_tokens;
    }
    if (seq.num_prefix_hit_tokens < 0) seq.num_prefix_hit_tokens = seq.num_tokens_cached;
    return true;
}

// The keys of the full blocks that running sequences have not computed yet: blocks [num_tokens_cached
// / block size, block_keys.size()) of each. Built once per step, only when some sequence waits.
class Scheduler::BlocksInProgress {
public:
    BlocksInProgress(std::span<SeqState* const> running, std::span<SeqState* const> admitted, int block_size)
        : block_size_(block_size) {
        for (const SeqState* s : running) {
            if (s->status == SeqStatus::kRunning) add(*s);
        }
        for (const SeqState* s : admitted) add(*s);
    }
    void add(const SeqState& s) {
        for (size_t i = static_cast<size_t>(s.num_tokens_cached / block_size_); i < s.block_keys.size(); ++i) {
            keys_.insert(s.block_keys[i]);
        }
    }
    bool contains(const kv::BlockHash& key) const { return keys_.contains(key); }

private:
    int block_size_;
    std::unordered_set<kv::BlockHash, kv::BlockHashHasher> keys_;
};

bool Scheduler::held_back(const SeqState& seq, const BlocksInProgress& in_progress) const {
    const int max_blocks = (seq.num_tokens - 1) / blocks_.block_size_tokens();
    const size_t next = blocks_.find_cached_prefix(seq.block_keys, max_blocks).size();
    return next < static_cast<size_t>(max_blocks) && next < seq.block_keys.size() &&
           in_progress.contains(seq.block_keys[next]);
}

// Admits in priority order while sequences, tokens and KV allow. A sequence is admitted only with KV
// for all its tokens plus one free block per running sequence, so that decodes rarely preempt. A
// sequence held back (cold duplicate) is passed over this step without taking anything.
void Scheduler::admit_waiting(std::vector<SeqState*>& waiting, const std::vector<SeqState*>& running, int num_running,
                              StepPlan& plan, int& budget, std::chrono::steady_clock::time_point now) {
    std::optional<BlocksInProgress> in_progress;  // built at the first sequence that has block keys
    std::vector<SeqState*> admitted;
    std::unordered_map<uint64_t, double> projected;
    while (SeqState* seq = next_waiting(waiting, projected, now)) {
        if (std::find(plan.preempted.begin(), plan.preempted.end(), seq) != plan.preempted.end()) continue;
        if (num_running >= config_.max_num_seqs || budget <= 0) break;
        if (blocks_.prefix_caching() && !seq->block_keys.empty()) {
            if (!in_progress) in_progress.emplace(running, admitted, blocks_.block_size_tokens());
            if (held_back(*seq, *in_progress)) {
                ++prefix_stats_.held_back_steps;
                continue;
            }
        }
        // The latency targets: admission keeps the decodes within the ITL target, and the first chunk
        // is what the target allows (judged before the prefix lookup, as if nothing were cached).
        if (!admission_fits(*seq, now)) break;
        const int wanted = std::min({seq->num_tokens, config_.prefill_chunk_tokens, budget});
        if (background_allowed(*seq, wanted) == 0) continue;   // background, its share of this step taken
        const int allowed = prefill_allowed(*seq, background_allowed(*seq, wanted), now);
        if (allowed == 0) break;
        if (!allocate_for_admission(*seq, /*reserve=*/num_running)) break;
        seq->status = SeqStatus::kRunning;
        seq->admission_order = next_admission_++;
        const int n = std::min(seq->num_tokens - seq->num_tokens_cached, allowed);
        add_to_load(*seq, n);
        plan.chunks.push_back({seq, n});
        budget -= n;
        ++num_running;
        admitted.push_back(seq);
        if (in_progress) in_progress->add(*seq);  // it now computes its blocks for those after it
    }
}

void Scheduler::decay_service(std::chrono::steady_clock::time_point now) {
    if (service_time_ != std::chrono::steady_clock::time_point{} && now > service_time_) {
        const double dt_s = std::chrono::duration<double>(now - service_time_).count();
        const double factor = std::exp2(-dt_s / config_.fair_share_half_life_s);
        for (auto it = service_.begin(); it != service_.end();) {
            it->second *= factor;
            it = it->second < 1e-3 ? service_.erase(it) : std::next(it);
        }
    }
    service_time_ = std::max(service_time_, now);
}

void Scheduler::charge(const StepPlan& plan) {
    for (const ScheduledChunk& c : plan.chunks) service_[c.seq->owner] += c.num_tokens;
}

double Scheduler::weight_of(uint64_t owner) const {
    for (const OwnerWeight& w : config_.owner_weights) {
        if (w.owner == owner) return w.weight;
    }
    return 1.0;
}

SeqState* Scheduler::next_waiting(std::vector<SeqState*>& remaining, std::unordered_map<uint64_t, double>& projected,
                                  std::chrono::steady_clock::time_point now) const {
    if (remaining.empty()) return nullptr;
    auto earlier = [&](const SeqState* a, const SeqState* b) {
        const double pa = effective_priority(*a, now), pb = effective_priority(*b, now);
        return pa != pb ? pa < pb : a->arrival < b->arrival;
    };
    auto share = [&](uint64_t owner) {
        auto [it, fresh] = projected.try_emplace(owner, 0.0);
        if (fresh) {
            const auto served = service_.find(owner);
            it->second = (served == service_.end() ? 0.0 : served->second) / weight_of(owner);
        }
        return it->second;
    };
    // The priority that goes next is that of the sequence the plain order takes (aging included).
    const int priority = (*std::min_element(remaining.begin(), remaining.end(), earlier))->priority;
    size_t pick = remaining.size();
    for (size_t i = 0; i < remaining.size(); ++i) {
        const SeqState* s = remaining[i];
        if (s->priority != priority) continue;
        if (pick == remaining.size()) {
            pick = i;
            continue;
        }
        const double si = share(s->owner), sp = share(remaining[pick]->owner);
        if (si < sp || (si == sp && earlier(s, remaining[pick]))) pick = i;
    }
    SeqState* seq = remaining[pick];
    projected[seq->owner] += (seq->num_tokens - seq->num_tokens_cached) / weight_of(seq->owner);
    remaining[pick] = remaining.back();
    remaining.pop_back();
    return seq;
}

void Scheduler::release(SeqState& seq) {
    blocks_.cache_full_blocks(seq.blocks, seq.block_keys, seq.num_tokens_cached);
    blocks_.release(seq.blocks);
    seq.status = SeqStatus::kFinished;
}

}  // namespace hichat::scheduler
