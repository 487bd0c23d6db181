// Engine: owns the engine thread, which alone touches sequences, the scheduler and the KV bookkeeping,
// and drives a ModelRunner step by step (continuous batching). Other threads use submit(), cancel()
// and stats() only; results flow back through each request's TokenSink.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "executor/model_runner.h"
#include "scheduler/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace hichat::engine {

// Whether the engine pipelines steps: plans and submits step N + 1 while the runner still computes
// step N, then processes step N's tokens. kAuto: on when the runner runs_async().
enum class StepOverlap { kAuto, kOn, kOff };

// One step as measured, for the step metrics (EngineConfig::on_step).
struct StepReport {
    double ms = 0;                 // from the step's start on the device (or the CPU) to its results
    int prefill_tokens = 0;        // tokens of prefill chunks
    int decode_rows = 0;           // sequences that decoded one token
    double itl_target_ms = 0;      // the scheduler's ITL target for it; 0: none
    double predicted_ms = 0;       // the cost model's prediction for it (0 before it is ready)
    // How long the engine thread blocked waiting for the step's results: near 0 when the device had
    // finished first (pipelined steps), that is when the host set the pace.
    double blocked_ms = 0;
    double decode_keys = 0;        // keys the decode rows attended over
    int graphs_captured = 0;       // step graphs the runner captured since the step before it was measured
};

struct EngineConfig {
    scheduler::SchedulerConfig scheduler;
    // Called on the engine thread after every step (quick: a histogram update); may be empty.
    std::function<void(const StepReport&)> on_step;
    int max_waiting = 1024;                 // queued requests beyond this are refused (429)
    // Requests are refused (kOverloaded: 503) while the predicted wait of those already waiting, the
    // time their prompts take to prefill beside the running decodes (the scheduler's cost model),
    // is above this; 0: no limit.
    double max_queue_wait_ms = 0;
    int max_model_len = 0;                  // prompt + generation per request; 0: the model's context
    std::vector<std::string> output_deny_list;  // phrases that stop generation (content_filter)
    StepOverlap overlap = StepOverlap::kAuto;   // kOn also with a synchronous runner (tests)
    bool prefix_cache = true;               // share the KV of full blocks across requests (same cache_salt)

    Status validate() const;
};

// A consistent-enough snapshot for /metrics; any thread.
struct EngineStats {
    int num_waiting = 0;
    int num_running = 0;
    int num_kv_blocks_total = 0;
    int num_kv_blocks_used = 0;    // held by a sequence
    int num_kv_blocks_free = 0;    // held by none (cached included): what can be allocated
    int num_kv_blocks_cached = 0;  // held by none, KV still cached under its key
    int64_t prefix_cache_evictions = 0;
    int num_host_kv_blocks_total = 0;   // the host tier (0: none)
    int num_host_kv_blocks_used = 0;    // host slots holding a block
    int64_t host_kv_offloaded = 0;      // blocks copied device -> host on eviction
    int64_t host_kv_restored = 0;       // blocks copied host -> device on a hit
    int64_t host_kv_dropped = 0;        // host copies overwritten by newer ones
    scheduler::PrefixCacheStats prefix_cache;
    int64_t num_steps = 0;
    int64_t num_preemptions = 0;
    // Latency targets missed (monotonic): steps that decoded a sequence with an ITL target and took
    // longer than it; sequences whose first token came later than their TTFT target.
    int64_t itl_target_misses = 0;
    int64_t ttft_target_misses = 0;
    // The load: prompt tokens of the waiting sequences and the predicted time to prefill them beside
    // the running decodes (0 until the cost model has seen enough steps).
    int64_t waiting_prompt_tokens = 0;
    double predicted_wait_ms = 0;
};

class Engine {
public:
    // Starts the engine thread. The tokenizer must outlive the engine.
    Engine(std::unique_ptr<executor::ModelRunner> runner, const tokenizer::Tokenizer& tokenizer,
           const EngineConfig& config);
    ~Engine();  // finishes every request with kCancelled and joins the thread
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // kOverloaded: the predicted wait is above EngineConfig::max_queue_wait_ms.
    enum class Admission { kAccepted, kQueueFull, kOverloaded, kStopped };
    // Any thread. The request must fit: prompt + max_tokens <= max_context_tokens().
    Admission submit(Request request);
    // Several requests at once, all or none (the n choices of one API request): they reach the engine
    // thread in the same step, so the cold duplicate hold-back lets one of them compute a shared prompt.
    Admission submit(std::vector<Request> requests);
    void cancel(RequestId id);
    // The predicted wait of the requests waiting now, ms (EngineStats::predicted_wait_ms); any thread.
    double predicted_wait_ms() const;
    // Whole seconds a refused client should wait before trying again: the predicted wait, 1 to 3600.
    int retry_after_s() const;
    EngineStats stats() const;
    // Longest prompt + generation one request may use (model context and KV pool).
    int max_context_tokens() const;
    const model::ModelConfig& model_config() const;
    // Stops taking requests, lets running ones finish, then returns (any thread).
    void drain_and_stop();

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hichat::engine
