// rope_inv_freq: RoPE inverse frequencies as transformers computes them (modeling_rope_utils.py,
// ROPE_INIT_FUNCTIONS "default", "linear", "llama3"). transformers works on float32 tensors with
// Python-float scalars cast to float32, so each step below is one float32 operation in the same order.
#include <cmath>
#include <numbers>
#include <vector>

#include "base/check.h"
#include "model/model_config.h"

namespace hichat::model {
namespace {

// 1 / theta^(i / d) for i = 0, 2, ..., d - 2: the exponent is arange(0, d, 2).float() / d.
std::vector<float> default_inv_freq(float theta, int dim) {
    std::vector<float> inv_freq;  // [dim / 2]
    for (int i = 0; i < dim; i += 2) {
        float exponent = static_cast<float>(i) / static_cast<float>(dim);
        inv_freq.push_back(1.0f / std::pow(theta, exponent));
    }
    return inv_freq;
}

// Llama 3.1: keep high frequencies (wavelength < original / high_freq_factor), divide low
// frequencies (wavelength > original / low_freq_factor) by factor, and blend in between with
// smooth = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor).
void apply_llama3_scaling(const RopeScaling& rope, std::vector<float>& inv_freq) {
    const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
    const float old_context_len = static_cast<float>(rope.original_max_position_embeddings);
    const float low_freq_wavelen = static_cast<float>(
        static_cast<double>(rope.original_max_position_embeddings) / rope.low_freq_factor);
    const float high_freq_wavelen = static_cast<float>(
        static_cast<double>(rope.original_max_position_embeddings) / rope.high_freq_factor);
    const float smooth_denominator =
        static_cast<float>(static_cast<double>(rope.high_freq_factor) - rope.low_freq_factor);
    for (float& f : inv_freq) {
        float wavelen = two_pi / f;
        if (wavelen > low_freq_wavelen) {
            f = f / rope.factor;
        } else if (!(wavelen < high_freq_wavelen)) {
            float smooth = (old_context_len / wavelen - rope.low_freq_factor) / smooth_denominator;
            f = (1.0f - smooth) * f / rope.factor + smooth * f;
        }
    }
}

}  // namespace

std::vector<float> rope_inv_freq(const ModelConfig& cfg) {
    CHECK_GT(cfg.head_dim, 0);
    CHECK_EQ(cfg.head_dim % 2, 0);
    std::vector<float> inv_freq = default_inv_freq(cfg.rope_theta, cfg.head_dim);
    switch (cfg.rope.type) {
        case RopeType::kDefault:
            break;
        case RopeType::kLinear:
            for (float& f : inv_freq) f /= cfg.rope.factor;
            break;
        case RopeType::kLlama3:
            apply_llama3_scaling(cfg.rope, inv_freq);
            break;
    }
    return inv_freq;
}

}  // namespace hichat::model
