// StepCostModel: predicts how long a forward step takes from what it holds, fitted online from the
// measured times of the steps the engine ran. The latency targets (SchedulerConfig::target_itl_ms)
// size each step's prefill from it.
//
// A step's time is modelled as a non-negative combination of
//   1, prefill tokens, decode rows, keys the decode rows attend over, query x key pairs of the
//   prefill chunks (causal attention),
// which is what a step costs on either backend: a fixed part (launches, the lm_head at small batch,
// the weights read once), the linear layers' work per token, and attention's work per key. The
// coefficients are fitted by least squares over exponentially forgotten observations (the normal
// equations are kept, forgetting old steps at `forgetting` per observation) with non-negativity
// enforced (projected coordinate descent), so that more work never predicts less time even where
// the observed steps do not separate two features.
#pragma once

#include <array>
#include <cstdint>

#include "scheduler/step_plan.h"

namespace hichat::scheduler {

struct StepFeatures {
    double prefill_tokens = 0;      // tokens of chunks that do not decode (prefill pieces)
    double decode_rows = 0;         // sequences computing exactly one token
    double decode_keys = 0;         // keys the decode rows attend over (their contexts)
    double prefill_key_pairs = 0;   // query x key pairs of the prefill chunks, causal

    StepFeatures& operator+=(const StepFeatures& o);
};

// The features of one chunk: `cached` tokens of context before it, `num_tokens` computed now.
StepFeatures chunk_features(int cached, int num_tokens);
// Sum over the plan's chunks (each from its sequence's num_tokens_cached).
StepFeatures plan_features(const StepPlan& plan);

class StepCostModel {
public:
    static constexpr int kNumTerms = 5;

    explicit StepCostModel(double forgetting = 0.98);

    void observe(const StepFeatures& features, double ms);
    // The fitted time of a step, ms (0 before any observation).
    double predict_ms(const StepFeatures& features) const;
    // Enough steps with prefill and enough with decodes seen to trust predictions.
    bool ready() const;
    int64_t num_observations() const { return num_observations_; }
    const std::array<double, kNumTerms>& coefficients() const { return beta_; }
    // How much longer than predicted the slow steps lately ran: the 90th percentile of measured /
    // predicted over the last kErrorWindow observations made while ready (1 with fewer than 20).
    // Steps differ from the model in ways its terms cannot see (a GEMM past its memory-bound knee,
    // host work between steps), and the error has a long tail: on the H100, 8B served at 256
    // streams, p50 1.00, p90 1.14, p99 2.10. The 95th percentile, tried there, held p99 ITL nearer the
    // target (32.0 ms for 25) but cost throughput (0.885 of untargeted) and TTFT (p99 1.5 s); the 90th:
    // 37.2 ms, 0.93, 1.07 s (bench/results/latency-targets-h100-2026-12-06.txt).
    double slow_ratio() const;
    static constexpr int kErrorWindow = 256;

private:
    static std::array<double, kNumTerms> terms(const StepFeatures& f);
    void refit();

    double forgetting_;
    std::array<std::array<double, kNumTerms>, kNumTerms> gram_{};   // sum of w x x^T
    std::array<double, kNumTerms> moment_{};                        // sum of w x t
    std::array<double, kNumTerms> beta_{};                          // ms per (scaled) term
    int64_t num_observations_ = 0, num_with_prefill_ = 0, num_with_decodes_ = 0;
    std::array<double, kErrorWindow> ratios_{};   // measured / predicted, a ring
    int num_ratios_ = 0, next_ratio_ = 0;
};

}  // namespace hichat::scheduler
