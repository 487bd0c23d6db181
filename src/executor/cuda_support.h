// What the CUDA runner can run, decided from the model's shape and the step sizes alone: compiled in
// every build (no CUDA headers), so the choice of runner is testable on machines with no GPU. The
// limits mirror the checks of the CUDA launchers (backend/cuda/attention.cu, attention_prefill.cu,
// sampling.cu) and of CudaWeights::upload; a launcher refusing a shape this file allows is a bug here.
#pragma once

#include <optional>
#include <string>

#include "model/model_config.h"

namespace hichat::executor {

// The step sizes the CUDA runner allocates for (CudaRunnerConfig's fields of the same names).
struct CudaStepShape {
    int max_num_seqs = 256;              // sequences per step
    int max_num_tokens_per_step = 8192;  // prefill chunk + decodes
};

// Empty when the CUDA runner supports `cfg` at `step`; else one sentence naming the first unsupported
// value and what is supported, e.g. "the CUDA backend needs head_dim 64, 80, 96, 128 or 256, this model has 32".
std::optional<std::string> cuda_unsupported_reason(const model::ModelConfig& cfg, const CudaStepShape& step);

}  // namespace hichat::executor
