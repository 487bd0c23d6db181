// Element-wise ops of the MLP and the residual stream: silu_mul(), add_inplace().
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"

namespace hichat::cpu {

void silu_mul(const float* gate, const float* up, int64_t m, int64_t dim, float* out) {
    active_kernels().silu_mul(gate, up, m * dim, out);
}

void add_inplace(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace hichat::cpu
