// IntWeights: the linear layers of an integer checkpoint (GPTQ, AWQ, compressed-tensors int-quantized
// and pack-quantized), decoded from the files' packings (model/packed_linear.h) and repacked on load
// into the layouts the CPU kernels read; owns them. Nothing is requantized: each element keeps its
// code and its group's scale and zero point.
//   4-bit: base/q4_layout.h's lines with an f16 scale and a zero code per group of 32 (a group of 128
//          is four of them; one per row is K / 32 of them). Scales stored in BF16 or F32 are rounded to
//          f16 (exact for F16 files: GPTQ, AWQ). Zero codes: GPTQ v1 stores zero - 1 (read back + 1, so
//          0..16), AWQ and gptq_v2 the zero, compressed-tensors zero + 8 (its codes are value + 8);
//          symmetric weights take 8, and no zero codes are stored when every one is 8.
//   act-order (g_idx): the columns are sorted by group (stable), so that each run of 32 shares one
//          scale, and the weight keeps the order (QuantScales::input_order) in which the kernels read
//          the activations; the projections that share an input (q/k/v, gate/up) must share it.
//   int8: the codes as stored, with one f32 scale per row.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/huge_page_buffer.h"
#include "base/status.h"
#include "model/packed_linear.h"
#include "model/quant_config.h"
#include "model/weights.h"

namespace hichat::model {

class IntWeights {
public:
    // Repacks each of `linears` (slots into `weights`) with up to `threads` threads and points its
    // slot at the result. Errors name the tensor: a g_idx value out of range or groups that do not
    // fall in whole runs of 32 columns, a scale that is not finite or exceeds f16, projections that
    // share an input but are quantized differently (one int, one float; different g_idx orders).
    static Result<std::unique_ptr<IntWeights>> repack(const std::vector<PackedLinear>& linears, const QuantConfig& q,
                                                      ModelWeights& weights, int threads);
    IntWeights(const IntWeights&) = delete;
    IntWeights& operator=(const IntWeights&) = delete;

    int64_t num_repacked() const { return num_repacked_; }

private:
    IntWeights() = default;

    HugePageBuffer arena_;
    int64_t num_repacked_ = 0;
};

}  // namespace hichat::model
