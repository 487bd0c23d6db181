// Reads QuantConfig from config.json or hf_quant_config.json (internal to model/).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "model/json_fields.h"
#include "model/quant_config.h"

namespace hichat::model {

// "<file>: field '<prefix><key>' is <value>: <why>" as kUnimplemented: a value HiChat does not run.
Status unsupported(const JsonFields& f, std::string_view key, const Json& value, std::string_view why);

// config.json's `quantization_config` (or the older `compression_config`); absent: kNone. Errors
// name the field: a method other than the FP8 and integer ones, a format, strategy, bit width or option HiChat
// does not run (kUnimplemented), a mistyped or inconsistent field (kInvalidArgument).
Result<QuantConfig> read_quant_config(const JsonFields& config);

// The integer formats (int_quant_config.cpp): `quant_method` gptq and awq, and a compressed-tensors
// group of int weights (`w`) with its input activations (`acts`, null when absent) in `format`.
Status read_gptq(const JsonFields& f, QuantConfig& q);
Status read_awq(const JsonFields& f, QuantConfig& q);
Status read_ct_int(const JsonFields& w, const JsonFields* acts, const std::string& format, QuantConfig& q);

// ModelOpt's hf_quant_config.json ({"producer": ..., "quantization": {"quant_algo": ...}}).
Result<QuantConfig> read_modelopt_quant_file(const JsonFields& file);

}  // namespace hichat::model
