// Scripted scheduling scenarios, no model: budgets, chunked prefill, admission by KV, priorities,
// aging and preemption.
#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <deque>

namespace hichat::scheduler {
namespace {

using Clock = std::chrono::steady_clock;

class SchedulerTest : public ::testing::Test {
protected:
    SeqState* add(int num_prompt_tokens, int priority = 0, double arrived_s_ago = 0) {
        SeqState& s = store_.emplace_back();
        s.id = store_.size();
        s.priority = priority;
        s.arrival = now_ - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrived_s_ago));
        s.num_tokens = num_prompt_tokens;
        seqs_.push_back(&s);
        return &s;
    }
    // Applies a plan as the engine does: computed tokens become cached; sampling appends a token.
    void commit(const StepPlan& plan) {
        for (const auto& c : plan.chunks) {
            bool samples = c.samples();
            c.seq->num_tokens_cached += c.num_tokens;
            if (samples) c.seq->num_tokens++;
        }
    }
    int tokens_for(const StepPlan& plan, const SeqState* s) {
        for (const auto& c : plan.chunks) {
            if (c.seq == s) return c.num_tokens;
        }
        return 0;
    }

    Clock::time_point now_ = Clock::now();
    std::deque<SeqState> store_;
    std::vector<SeqState*> seqs_;
};

TEST_F(SchedulerTest, ChunksALongPromptUnderTheBudgetAndDecodesOthersEveryStep) {
    kv::BlockManager blocks(100, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 48}, blocks);
    SeqState* short_seq = add(10);
    StepPlan p1 = sched.schedule(seqs_, now_);
    EXPECT_EQ(tokens_for(p1, short_seq), 10);
    commit(p1);
    SeqState* long_seq = add(200);
    StepPlan p2 = sched.schedule(seqs_, now_);
    EXPECT_EQ(tokens_for(p2, short_seq), 1) << "running sequences decode every step";
    EXPECT_EQ(tokens_for(p2, long_seq), 48) << "prefill is chunked";
    EXPECT_LE(p2.num_tokens(), 64);
    commit(p2);
    int steps = 0;
    while (long_seq->num_tokens_cached < 200) {
        StepPlan p = sched.schedule(seqs_, now_);
        EXPECT_EQ(tokens_for(p, short_seq), 1);
        EXPECT_LE(p.num_tokens(), 64);
        commit(p);
        ++steps;
    }
    EXPECT_EQ(steps, 4);  // 152 remaining tokens in chunks of 48
    EXPECT_EQ(long_seq->num_tokens, 201);
}

TEST_F(SchedulerTest, AdmitsOnlyWhatTheKvCanHold) {
    kv::BlockManager blocks(10, 16);
    Scheduler sched({.max_num_seqs = 8, .max_num_tokens_per_step = 1024, .prefill_chunk_tokens = 1024}, blocks);
    SeqState* a = add(100);  // 7 blocks
    SeqState* b = add(60);   // 4 blocks: does not fit beside a
    StepPlan p = sched.schedule(seqs_, now_);
    EXPECT_EQ(a->status, SeqStatus::kRunning);
    EXPECT_EQ(b->status, SeqStatus::kWaiting);
    commit(p);
    sched.release(*a);
    StepPlan p2 = sched.schedule(seqs_, now_);
    EXPECT_EQ(b->status, SeqStatus::kRunning);
    EXPECT_EQ(tokens_for(p2, b), 60);
}

TEST_F(SchedulerTest, LowerPriorityValueRunsFirstAndWaitingAges) {
    kv::BlockManager blocks(100, 16);
    Scheduler sched({.max_num_seqs = 1, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 64,
                     .priority_aging_per_s = 1.0},
                    blocks);
    SeqState* low = add(8, /*priority=*/5);
    SeqState* high = add(8, /*priority=*/0);
    sched.schedule(seqs_, now_);
    EXPECT_EQ(high->status, SeqStatus::kRunning);
    EXPECT_EQ(low->status, SeqStatus::kWaiting);

    // A request that has waited 10 s at priority 5 beats a fresh one at priority 0.
    store_.clear();
    seqs_.clear();
    kv::BlockManager blocks2(100, 16);
    Scheduler sched2({.max_num_seqs = 1, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 64,
                      .priority_aging_per_s = 1.0},
                     blocks2);
    SeqState* old_low = add(8, 5, /*arrived_s_ago=*/10);
    SeqState* new_high = add(8, 0);
    sched2.schedule(seqs_, now_);
    EXPECT_EQ(old_low->status, SeqStatus::kRunning);
    EXPECT_EQ(new_high->status, SeqStatus::kWaiting);
}

TEST_F(SchedulerTest, PreemptsTheNewestWhenDecodesRunOutOfKv) {
    kv::BlockManager blocks(4, 4);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 64}, blocks);
    SeqState* first = add(4);
    commit(sched.schedule(seqs_, now_));   // first: 1 block, 5 tokens
    SeqState* second = add(4);
    commit(sched.schedule(seqs_, now_));   // first decodes into block 2; second admitted with 1 block
    ASSERT_EQ(second->status, SeqStatus::kRunning);
    // Decode until the pool is exhausted: the newest sequence is preempted, the oldest keeps going.
    bool preempted = false;
    for (int i = 0; i < 8 && !preempted; ++i) {
        StepPlan p = sched.schedule(seqs_, now_);
        for (SeqState* s : p.preempted) preempted |= s == second;
        EXPECT_GE(tokens_for(p, first), 1);
        commit(p);
    }
    EXPECT_TRUE(preempted);
    EXPECT_EQ(second->status, SeqStatus::kWaiting);
    EXPECT_EQ(second->num_tokens_cached, 0) << "a preempted sequence recomputes its KV";
    EXPECT_TRUE(second->blocks.blocks.empty());
}

TEST_F(SchedulerTest, ConfigValidationNamesTheField) {
    EXPECT_FALSE((SchedulerConfig{.max_num_seqs = 0}).validate().ok());
    auto s = SchedulerConfig{.max_num_seqs = 64, .max_num_tokens_per_step = 8}.validate();
    EXPECT_NE(s.message().find("max_num_tokens_per_step"), std::string::npos);
}

// Keys for `n` full blocks of a prompt whose block i holds tokens tag * 1000 + i (block-size 16).
std::vector<kv::BlockHash> keys_for(int tag, int n) {
    std::vector<kv::BlockHash> keys;
    kv::BlockHash parent = kv::root_block_hash("");
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> tokens(16, tag * 1000 + i);
        parent = kv::chain_block_hash(parent, tokens);
        keys.push_back(parent);
    }
    return keys;
}

TEST_F(SchedulerTest, AdmissionTakesTheCachedPrefixAndPrefillsTheRest) {
    kv::BlockManager blocks(20, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 256, .prefill_chunk_tokens = 32}, blocks);
    SeqState* first = add(100);
    first->block_keys = keys_for(1, 6);
    while (first->num_tokens_cached < 100) commit(sched.schedule(seqs_, now_));
    sched.release(*first);
    seqs_.clear();
    EXPECT_EQ(blocks.num_blocks_cached(), 6);

    SeqState* again = add(100);
    again->block_keys = keys_for(1, 6);
    StepPlan p = sched.schedule(seqs_, now_);
    EXPECT_EQ(again->num_prefix_hit_tokens, 96);
    EXPECT_EQ(tokens_for(p, again), 4) << "chunked prefill starts after the cached prefix";
    EXPECT_EQ(sched.prefix_cache_stats().queried_tokens, 200);
    EXPECT_EQ(sched.prefix_cache_stats().hit_tokens, 96);
    blocks.check_invariants();
}

TEST_F(SchedulerTest, AdmissionCountsBlocksHeldByARunningSequenceAsFree) {
    // 10 blocks: a running 96-token prompt holds 7 (6 full + 1 for its next token). Another request
    // with the same 6-block head and 2 more blocks needs 8 without sharing, but only 2 new ones.
    kv::BlockManager blocks(10, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 256, .prefill_chunk_tokens = 256}, blocks);
    SeqState* running = add(96);
    running->block_keys = keys_for(1, 6);
    commit(sched.schedule(seqs_, now_));
    ASSERT_EQ(running->status, SeqStatus::kRunning);
    SeqState* sharer = add(120);
    sharer->block_keys = keys_for(1, 6);  // its 7th block's tokens differ; not full yet anyway
    StepPlan p = sched.schedule(seqs_, now_);
    EXPECT_EQ(sharer->status, SeqStatus::kRunning);
    EXPECT_EQ(sharer->num_prefix_hit_tokens, 96);
    EXPECT_EQ(tokens_for(p, sharer), 24);
    EXPECT_EQ(blocks.num_blocks_used(), 9) << "7 + the sharer's 2 own blocks";
    blocks.check_invariants();
}

TEST_F(SchedulerTest, PreemptedSequenceFindsItsBlocksAgain) {
    kv::BlockManager blocks(6, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 256, .prefill_chunk_tokens = 256}, blocks);
    SeqState* old_seq = add(40);
    old_seq->block_keys = keys_for(1, 2);
    commit(sched.schedule(seqs_, now_));
    SeqState* newer = add(20, /*priority=*/1);
    commit(sched.schedule(seqs_, now_));
    ASSERT_EQ(newer->status, SeqStatus::kRunning);
    // The old one grows until the pool runs out: the newer, less urgent one is preempted.
    while (newer->status == SeqStatus::kRunning) {
        commit(sched.schedule(seqs_, now_));
        ASSERT_LT(old_seq->num_tokens, 200) << "no preemption happened";
    }
    EXPECT_TRUE(newer->preempted);
    EXPECT_EQ(newer->num_tokens_cached, 0);
    blocks.check_invariants();
    const int cached_before = blocks.num_blocks_cached();
    EXPECT_EQ(cached_before, 0) << "the newer one's blocks were not keyed (no keys given)";
    sched.release(*old_seq);
    EXPECT_EQ(blocks.num_blocks_cached(), 2) << "the old one's full prompt blocks stay cached";
    blocks.check_invariants();
}

// Two sequences with the same 100-token prompt submitted together: the second waits while the first
// computes the shared blocks (the cold duplicate hold-back), then takes them from the cache.
TEST_F(SchedulerTest, ColdDuplicateWaitsForTheHolderAndTakesItsBlocks) {
    kv::BlockManager blocks(40, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 256, .prefill_chunk_tokens = 256}, blocks);
    SeqState* first = add(100);
    SeqState* second = add(100);
    first->block_keys = second->block_keys = keys_for(1, 6);
    StepPlan p1 = sched.schedule(seqs_, now_);
    ASSERT_EQ(p1.chunks.size(), 1u) << "one of the two computes the prompt";
    SeqState* holder = p1.chunks[0].seq;
    SeqState* other = holder == first ? second : first;
    EXPECT_EQ(other->status, SeqStatus::kWaiting);
    EXPECT_EQ(sched.prefix_cache_stats().held_back_steps, 1);
    commit(p1);
    StepPlan p2 = sched.schedule(seqs_, now_);
    EXPECT_EQ(other->status, SeqStatus::kRunning);
    EXPECT_EQ(other->num_prefix_hit_tokens, 96) << "admitted with the holder's 6 full blocks";
    EXPECT_EQ(tokens_for(p2, other), 4);
    EXPECT_EQ(tokens_for(p2, holder), 1) << "the holder decodes";
    EXPECT_EQ(sched.prefix_cache_stats().hit_tokens, 96);
    EXPECT_EQ(blocks.num_blocks_used(), 7 + 1) << "6 shared blocks, one own block each";
    blocks.check_invariants();
}

// A chunked holder: the duplicate waits block by block while the holder's prefill is behind, and is
// admitted with every block the holder computed.
TEST_F(SchedulerTest, ColdDuplicateWaitsThroughAChunkedPrefill) {
    kv::BlockManager blocks(40, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 32}, blocks);
    SeqState* first = add(100);
    first->block_keys = keys_for(1, 6);
    commit(sched.schedule(seqs_, now_));  // 32 of 100 tokens computed
    SeqState* second = add(100, /*priority=*/0, /*arrived_s_ago=*/0);
    second->block_keys = keys_for(1, 6);
    int steps = 0;
    while (second->status == SeqStatus::kWaiting) {
        commit(sched.schedule(seqs_, now_));
        ASSERT_LT(++steps, 10) << "never admitted";
    }
    EXPECT_EQ(second->num_prefix_hit_tokens, 96);
    EXPECT_GE(first->num_tokens_cached, 96) << "admitted only once the holder was past the shared blocks";
    EXPECT_EQ(sched.prefix_cache_stats().hit_tokens, 96);
}

// The hold-back ends with the holder: a holder that finishes (or is cancelled) mid-prefill lets the
// duplicate in at once, which computes what is missing itself; a different prompt is never held.
TEST_F(SchedulerTest, HoldBackEndsWhenTheHolderStopsAndNeverTouchesOtherPrompts) {
    kv::BlockManager blocks(40, 16);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 64, .prefill_chunk_tokens = 32}, blocks);
    SeqState* holder = add(100);
    SeqState* duplicate = add(100);
    SeqState* stranger = add(100);
    holder->block_keys = duplicate->block_keys = keys_for(1, 6);
    stranger->block_keys = keys_for(2, 6);
    StepPlan p1 = sched.schedule(seqs_, now_);
    SeqState* running = p1.chunks[0].seq;
    SeqState* waiting = running == holder ? duplicate : holder;
    EXPECT_EQ(waiting->status, SeqStatus::kWaiting);
    EXPECT_EQ(stranger->status, SeqStatus::kRunning) << "a held-back sequence does not block the next one";
    commit(p1);
    sched.release(*running);  // cancelled after 32 tokens: 2 blocks cached
    std::erase(seqs_, running);
    StepPlan p2 = sched.schedule(seqs_, now_);
    EXPECT_EQ(waiting->status, SeqStatus::kRunning);
    EXPECT_EQ(waiting->num_prefix_hit_tokens, 32);
    blocks.check_invariants();
}

// Without the prefix cache (no keys) nothing is held back.
TEST_F(SchedulerTest, NoHoldBackWithoutPrefixCaching) {
    kv::BlockManager blocks(40, 16, /*prefix_caching=*/false);
    Scheduler sched({.max_num_seqs = 4, .max_num_tokens_per_step = 256, .prefill_chunk_tokens = 256}, blocks);
    SeqState* a = add(100);
    SeqState* b = add(100);
    StepPlan p = sched.schedule(seqs_, now_);
    EXPECT_EQ(tokens_for(p, a), 100);
    EXPECT_EQ(tokens_for(p, b), 100);
    EXPECT_EQ(sched.prefix_cache_stats().held_back_steps, 0);
}

}  // namespace
}  // namespace hichat::scheduler
