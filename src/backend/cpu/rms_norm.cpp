// rms_norm(): y = x / sqrt(mean(x^2) + eps) * w, row by row, in the order transformers computes it.
#include <cmath>

#include "backend/cpu/ops.h"
#include "backend/cpu/weight_reader.h"
#include "base/check.h"

namespace hichat::cpu {

void rms_norm(const float* x, int64_t m, int64_t dim, const WeightTensor& w, float eps, float* y) {
    CHECK_EQ(w.num_elements(), dim) << "rms_norm weight size";
    with_weight_reader(w.data, w.dtype, [&](auto read) {
        for (int64_t i = 0; i < m; ++i) {
            const float* xi = x + i * dim;
            float* yi = y + i * dim;
            // Double sums keep the mean exact to fp32 for any dim; four of them, so the adds overlap.
            double partial[4] = {};
            int64_t d = 0;
            for (; d + 4 <= dim; d += 4)
                for (int j = 0; j < 4; ++j) partial[j] += double{xi[d + j]} * xi[d + j];
            for (; d < dim; ++d) partial[0] += double{xi[d]} * xi[d];
            const double sum_squares = (partial[0] + partial[1]) + (partial[2] + partial[3]);
            const float mean = static_cast<float>(sum_squares / static_cast<double>(dim));
            const float inv_rms = 1.0f / std::sqrt(mean + eps);
            for (d = 0; d < dim; ++d) yi[d] = read(d) * (xi[d] * inv_rms);
        }
    });
}

}  // namespace hichat::cpu
