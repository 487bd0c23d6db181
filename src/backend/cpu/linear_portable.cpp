// linear() kernels in plain C++: the fallback on CPUs without AVX2 and on non-x86 builds.
#include <algorithm>

#include "backend/cpu/kernel_table.h"

namespace hichat::cpu::portable {
namespace {

constexpr int kChunk = 256;  // weights converted to fp32 per step

void convert_weights(const LinearProblem& p, int64_t idx, int count, float* out) {
    switch (p.w_dtype) {
        case DType::kF32: {
            const float* w = static_cast<const float*>(p.w) + idx;
            std::copy(w, w + count, out);
            return;
        }
        case DType::kBF16: {
            const uint16_t* w = static_cast<const uint16_t*>(p.w) + idx;
            for (int i = 0; i < count; ++i) out[i] = bf16_to_f32(w[i]);
            return;
        }
        case DType::kF16: {
            const uint16_t* w = static_cast<const uint16_t*>(p.w) + idx;
            for (int i = 0; i < count; ++i) out[i] = f16_to_f32(w[i]);
            return;
        }
        case DType::kF8E4M3:  // refused by cpu::linear
        case DType::kI8:      // linear_i8
        case DType::kQ4:      // linear_q4
        case DType::kI32:     // repacked on load
        case DType::kI64:
            return;
    }
}

}  // namespace

void gemv(const LinearProblem& p, int64_t n_begin, int64_t n_end, const void* /*next_rows*/, float* /*scratch*/) {
    float chunk[kChunk];
    for (int64_t row = n_begin; row < n_end; ++row) {
        for (int64_t k0 = 0; k0 < p.k; k0 += kChunk) {
            int count = static_cast<int>(std::min<int64_t>(kChunk, p.k - k0));
            convert_weights(p, row * p.k + k0, count, chunk);
            for (int64_t i = 0; i < p.m; ++i) {
                float partial = dot(p.x + i * p.k + k0, chunk, count);
                float& out = p.y[i * p.n + row];
                out = k0 == 0 ? partial : out + partial;
            }
        }
    }
}

void gemm(const LinearProblem& p, int64_t n_begin, int64_t n_end, float* scratch) {
    gemv(p, n_begin, n_end, nullptr, scratch);
}

}  // namespace hichat::cpu::portable
