// Reads RoPE settings from config.json in either spelling (internal to model/):
//   older: top-level "rope_theta" + "rope_scaling": {"rope_type" | "type", "factor", ...}
//   transformers 5: "rope_parameters": {"rope_type", "rope_theta", "factor", ...}
#pragma once

#include "base/status.h"
#include "model/json_fields.h"
#include "model/model_config.h"

namespace hichat::model {

// Fills cfg.rope_theta and cfg.rope; needs cfg.max_position_embeddings (the llama3 fallback for
// original_max_position_embeddings). Errors name the file and the field; rope types other than
// default, linear and llama3 are kUnimplemented.
Status read_rope_config(const JsonFields& top, ModelConfig& cfg);

}  // namespace hichat::model
