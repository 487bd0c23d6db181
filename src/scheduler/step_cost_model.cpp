#include "scheduler/step_cost_model.h"

#include <algorithm>
#include <cmath>

namespace hichat::scheduler {
namespace {

// Each term divided by a typical magnitude, so that the normal equations are well scaled.
constexpr std::array<double, StepCostModel::kNumTerms> kTermScale = {1.0, 256.0, 64.0, 65536.0, 262144.0};
constexpr int kMinObservations = 8;   // of each kind below, before predictions are trusted
constexpr int kMinOfEachKind = 4;
constexpr int kMaxSweeps = 200;
constexpr double kRidge = 1e-9;       // relative to the Gram matrix's trace: keeps unseen terms finite

}  // namespace

StepFeatures& StepFeatures::operator+=(const StepFeatures& o) {
    prefill_tokens += o.prefill_tokens;
    decode_rows += o.decode_rows;
    decode_keys += o.decode_keys;
    prefill_key_pairs += o.prefill_key_pairs;
    return *this;
}

StepFeatures chunk_features(int cached, int num_tokens) {
    StepFeatures f;
    if (num_tokens == 1) {
        f.decode_rows = 1;
        f.decode_keys = cached + 1.0;
    } else {
        // Query i (0-based) of the chunk sees cached + i + 1 keys.
        f.prefill_tokens = num_tokens;
        f.prefill_key_pairs = double{1} * num_tokens * cached + double{1} * num_tokens * (num_tokens + 1) / 2;
    }
    return f;
}

StepFeatures plan_features(const StepPlan& plan) {
    StepFeatures f;
    for (const ScheduledChunk& c : plan.chunks) f += chunk_features(c.seq->num_tokens_cached, c.num_tokens);
    return f;
}

StepCostModel::StepCostModel(double forgetting) : forgetting_(forgetting) {}

std::array<double, StepCostModel::kNumTerms> StepCostModel::terms(const StepFeatures& f) {
    const std::array<double, kNumTerms> raw = {1.0, f.prefill_tokens, f.decode_rows, f.decode_keys, f.prefill_key_pairs};
    std::array<double, kNumTerms> x{};
    for (int i = 0; i < kNumTerms; ++i) x[i] = raw[i] / kTermScale[i];
    return x;
}

void StepCostModel::observe(const StepFeatures& features, double ms) {
    if (!std::isfinite(ms) || ms < 0) return;
    if (ready()) {
        const double predicted = predict_ms(features);
        if (predicted > 0) {
            ratios_[static_cast<size_t>(next_ratio_)] = ms / predicted;
            next_ratio_ = (next_ratio_ + 1) % kErrorWindow;
            num_ratios_ = std::min(num_ratios_ + 1, kErrorWindow);
        }
    }
    const std::array<double, kNumTerms> x = terms(features);
    for (int i = 0; i < kNumTerms; ++i) {
        moment_[i] = forgetting_ * moment_[i] + x[i] * ms;
        for (int j = 0; j < kNumTerms; ++j) gram_[i][j] = forgetting_ * gram_[i][j] + x[i] * x[j];
    }
    ++num_observations_;
    num_with_prefill_ += features.prefill_tokens > 0;
    num_with_decodes_ += features.decode_rows > 0;
    refit();
}

// Minimises 1/2 b^T G b - m^T b (+ a small ridge) over b >= 0, one coordinate at a time, each set to
// its exact minimiser given the others and clamped at 0; starts from the previous fit, which is
// close after one more observation.
void StepCostModel::refit() {
    double trace = 0;
    for (int i = 0; i < kNumTerms; ++i) trace += gram_[i][i];
    const double ridge = kRidge * std::max(trace, 1.0);
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
        double moved = 0;
        for (int i = 0; i < kNumTerms; ++i) {
            double rest = moment_[i];
            for (int j = 0; j < kNumTerms; ++j) {
                if (j != i) rest -= gram_[i][j] * beta_[j];
            }
            const double next = std::max(0.0, rest / (gram_[i][i] + ridge));
            moved = std::max(moved, std::abs(next - beta_[i]));
            beta_[i] = next;
        }
        if (moved < 1e-12) break;
    }
}

double StepCostModel::predict_ms(const StepFeatures& features) const {
    const std::array<double, kNumTerms> x = terms(features);
    double ms = 0;
    for (int i = 0; i < kNumTerms; ++i) ms += beta_[i] * x[i];
    return ms;
}

double StepCostModel::slow_ratio() const {
    if (num_ratios_ < 20) return 1.0;
    std::array<double, kErrorWindow> r = ratios_;
    const auto end = r.begin() + num_ratios_;
    const auto at = r.begin() + (num_ratios_ * 90) / 100;
    std::nth_element(r.begin(), at, end);
    return std::max(1.0, *at);
}

bool StepCostModel::ready() const {
    return num_observations_ >= kMinObservations && num_with_prefill_ >= kMinOfEachKind &&
           num_with_decodes_ >= kMinOfEachKind;
}

}  // namespace hichat::scheduler
