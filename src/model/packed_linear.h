// PackedLinear: the tensors of one linear layer of an integer checkpoint (GPTQ, AWQ, compressed-tensors
// int-quantized / pack-quantized) as its files store them, found and checked against the weight's
// [n, k] (internal to model/). model/int_weights.h repacks them for the kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/quant_config.h"
#include "model/weight_files.h"
#include "model/weights.h"

namespace hichat::model {

struct PackedLinear {
    std::string module;             // "model.layers.0.self_attn.q_proj"
    WeightTensor* slot = nullptr;   // gets the repacked weight
    int64_t n = 0, k = 0;           // the weight's [out_features, in_features]
    const SafetensorsTensor* codes = nullptr;   // qweight, weight_packed, or weight (I8)
    const SafetensorsTensor* scales = nullptr;  // scales, weight_scale
    const SafetensorsTensor* zeros = nullptr;   // qzeros, weight_zero_point; null: symmetric (zero 8)
    const SafetensorsTensor* g_idx = nullptr;   // g_idx, weight_g_idx; null: groups in column order
};

// Scale groups per row of a [n, k] weight under `q`: ceil(k / group_size), or 1 per channel.
int64_t scale_groups(const QuantConfig& q, int64_t k);

// Looks up a tensor by name, marking it used (the checkpoint binder's).
using TakeTensor = std::function<const WeightFiles::Entry*(const std::string&)>;

// The integer tensors of the linear weight `name` ("<module>.weight", of `shape` [n, k]) under `q`
// (q.packing != kNone). Returns false when the checkpoint holds `name` itself in float (a module the
// producer left unquantized: bind it as it is). Otherwise returns true and appends the PackedLinear to
// `out`, or a problem naming the file and tensor to `problems` for each tensor that is missing,
// misshaped or of the wrong dtype. A GPTQ-style all-zero `<module>.bias` of a model without biases is
// taken too (producers store one for every layer).
bool find_packed_linear(const WeightFiles& files, const QuantConfig& q, const std::string& name,
                        const std::vector<int64_t>& shape, WeightTensor* slot, const TakeTensor& take,
                        std::vector<PackedLinear>& out, std::vector<std::string>& problems);

}  // namespace hichat::model
