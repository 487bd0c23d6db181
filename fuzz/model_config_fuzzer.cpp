// config.json reader: arbitrary bytes as config.json -> parse_model_config. Bad input is a Status
// naming the file; a config that is accepted must be usable: the sizes the forward pass divides by
// are positive and consistent, and the RoPE frequencies derived from it are finite and positive.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "model/model_config.h"

using hichat::fuzz::require;

namespace {

void check_accepted(const hichat::model::ModelConfig& c) {
    require(c.hidden_size > 0 && c.intermediate_size > 0 && c.num_layers > 0 && c.vocab_size > 0,
            "accepted config has a non-positive size");
    require(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0,
            "accepted config: num_kv_heads must divide num_heads");
    require(c.head_dim > 0 && c.head_dim % 2 == 0, "accepted config: head_dim must be positive and even");
    require(c.max_position_embeddings > 0, "accepted config: max_position_embeddings must be positive");
    require(std::isfinite(c.rms_norm_eps) && c.rms_norm_eps > 0.0f, "accepted config: rms_norm_eps must be a positive float");
    require(std::isfinite(c.rope_theta) && c.rope_theta > 1.0f, "accepted config: rope_theta must be a finite float > 1");
    if (c.head_dim > 4096) return;  // the frequency table is head_dim / 2 floats: keep inputs cheap
    for (float f : hichat::model::rope_inv_freq(c)) {
        require(std::isfinite(f) && f > 0.0f, "accepted config gives a RoPE frequency that is not finite and positive");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto config = hichat::model::parse_model_config(text, "config.json");
    if (!config.ok()) {
        const std::string& message = config.status().message();
        require(message.rfind("config.json", 0) == 0, "error does not name the file: " + message);
        return 0;
    }
    check_accepted(*config);
    return 0;
}
