// Element-wise reads of a stored weight tensor as float (small ops: norms, embeddings, biases).
// The dtype switch happens once per call, outside the element loop.
#pragma once

#include <cstdint>

#include "base/check.h"
#include "base/dtype.h"

namespace hichat::cpu {

struct F32Reader {
    const float* data;
    float operator()(int64_t i) const { return data[i]; }
};
struct Bf16Reader {
    const uint16_t* data;
    float operator()(int64_t i) const { return bf16_to_f32(data[i]); }
};
struct F16Reader {
    const uint16_t* data;
    float operator()(int64_t i) const { return f16_to_f32(data[i]); }
};

// Calls fn(reader) with a reader of `data` in `dtype`: reader(i) is element i as float.
template <class Fn>
void with_weight_reader(const void* data, DType dtype, Fn&& fn) {
    switch (dtype) {
        case DType::kF32: return fn(F32Reader{static_cast<const float*>(data)});
        case DType::kBF16: return fn(Bf16Reader{static_cast<const uint16_t*>(data)});
        case DType::kF16: return fn(F16Reader{static_cast<const uint16_t*>(data)});
        case DType::kF8E4M3: CHECK(false) << "FP8 weights reach the CPU kernels dequantized (model/fp8_dequant.h)";
            return;
        case DType::kI8: CHECK(false) << "int8 weights are linear layers' only (linear_i8)";
            return;
        case DType::kQ4: CHECK(false) << "4-bit weights are linear layers' only (linear_q4)";
            return;
        case DType::kI32:
        case DType::kI64: CHECK(false) << "integer tensors of checkpoints are repacked on load (model/int_weights.h)";
    }
}

}  // namespace hichat::cpu
