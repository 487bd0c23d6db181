// rope_inv_freq against the formulas computed here independently in double precision.
// Formula source: transformers src/transformers/modeling_rope_utils.py, _compute_default_rope_parameters,
// _compute_linear_scaling_rope_parameters and _compute_llama3_parameters (the latter follows Meta's
// llama3 reference apply_scaling):
//   inv_freq[i] = 1 / theta^(2i / d),  i = 0 .. d/2 - 1
//   linear:  inv_freq[i] / factor
//   llama3:  wavelen = 2 pi / inv_freq[i]
//            wavelen < original / high_freq_factor  -> inv_freq[i]
//            wavelen > original / low_freq_factor   -> inv_freq[i] / factor
//            otherwise, smooth = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor),
//                       (1 - smooth) * inv_freq[i] / factor + smooth * inv_freq[i]
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "model/model_config.h"

namespace hichat::model {
namespace {

enum class Band { kHigh, kMedium, kLow };

struct Expected {
    double inv_freq;
    Band band;
};

Expected llama3_reference(double theta, int d, int i, double factor, double low, double high, double original) {
    double inv = 1.0 / std::pow(theta, 2.0 * i / d);
    double wavelen = 2.0 * std::numbers::pi / inv;
    if (wavelen < original / high) return {inv, Band::kHigh};
    if (wavelen > original / low) return {inv / factor, Band::kLow};
    double smooth = (original / wavelen - low) / (high - low);
    return {(1.0 - smooth) * inv / factor + smooth * inv, Band::kMedium};
}

ModelConfig llama3_config(int head_dim, float factor) {
    ModelConfig cfg;
    cfg.head_dim = head_dim;
    cfg.rope_theta = 500000.0f;
    cfg.rope.type = RopeType::kLlama3;
    cfg.rope.factor = factor;
    cfg.rope.low_freq_factor = 1.0f;
    cfg.rope.high_freq_factor = 4.0f;
    cfg.rope.original_max_position_embeddings = 8192;
    return cfg;
}

// float32 results within a few ulp of the double formula; every band must occur.
void check_llama3(const ModelConfig& cfg) {
    std::vector<float> got = rope_inv_freq(cfg);
    ASSERT_EQ(got.size(), static_cast<size_t>(cfg.head_dim / 2));
    int num_per_band[3] = {0, 0, 0};
    for (int i = 0; i < cfg.head_dim / 2; ++i) {
        Expected e = llama3_reference(cfg.rope_theta, cfg.head_dim, i, cfg.rope.factor, cfg.rope.low_freq_factor,
                                      cfg.rope.high_freq_factor, cfg.rope.original_max_position_embeddings);
        ++num_per_band[static_cast<int>(e.band)];
        EXPECT_NEAR(got[i], e.inv_freq, 4e-6 * e.inv_freq) << "i=" << i;
    }
    EXPECT_GT(num_per_band[0], 0);
    EXPECT_GT(num_per_band[1], 0);
    EXPECT_GT(num_per_band[2], 0);
}

TEST(RopeInvFreq, Llama31MatchesDoubleFormula) { check_llama3(llama3_config(128, 8.0f)); }

TEST(RopeInvFreq, Llama32MatchesDoubleFormula) { check_llama3(llama3_config(64, 32.0f)); }

TEST(RopeInvFreq, DefaultAndLinear) {
    ModelConfig cfg;
    cfg.head_dim = 64;
    cfg.rope_theta = 10000.0f;
    std::vector<float> plain = rope_inv_freq(cfg);
    ASSERT_EQ(plain.size(), 32u);
    EXPECT_EQ(plain[0], 1.0f);
    for (int i = 0; i < 32; ++i) {
        double e = 1.0 / std::pow(10000.0, 2.0 * i / 64);
        EXPECT_NEAR(plain[i], e, 4e-6 * e) << i;
    }
    cfg.rope.type = RopeType::kLinear;
    cfg.rope.factor = 4.0f;
    std::vector<float> linear = rope_inv_freq(cfg);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(linear[i], plain[i] / 4.0f) << i;
}

}  // namespace
}  // namespace hichat::model
