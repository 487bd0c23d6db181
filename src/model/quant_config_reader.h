// Reads QuantConfig from config.json or hf_quant_config.json (internal to model/).
#pragma once

#include <string>

#include "base/status.h"
#include "model/json_fields.h"
#include "model/quant_config.h"

namespace hichat::model {

// config.json's `quantization_config` (or the older `compression_config`); absent: kNone. Errors
// name the field: a method other than the FP8 ones, a format, strategy, bit width or option HiChat
// does not run (kUnimplemented), a mistyped or inconsistent field (kInvalidArgument).
Result<QuantConfig> read_quant_config(const JsonFields& config);

// ModelOpt's hf_quant_config.json ({"producer": ..., "quantization": {"quant_algo": ...}}).
Result<QuantConfig> read_modelopt_quant_file(const JsonFields& file);

}  // namespace hichat::model
