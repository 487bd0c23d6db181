// linear(): y = x w^T (+ bias). Splits the output columns (weight rows) over the pool's threads and runs
// the active SIMD level's kernel on each range: a streaming GEMV for small m (decode), a packed,
// register-blocked GEMM for large m (prefill).
#include <algorithm>
#include <memory>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/weight_reader.h"
#include "base/check.h"

namespace hichat::cpu {
namespace {

// The calling thread's kernel scratch, at least `num_floats` long: grows when a larger m needs it, and
// is otherwise reused for the thread's life.
float* thread_scratch(int64_t num_floats) {
    struct AlignedFree {
        void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
    };
    thread_local std::unique_ptr<float[], AlignedFree> scratch;
    thread_local int64_t capacity = 0;
    if (capacity < num_floats) {
        scratch.reset(static_cast<float*>(
            ::operator new[](sizeof(float) * static_cast<size_t>(num_floats), std::align_val_t{64})));
        capacity = num_floats;
    }
    return scratch.get();
}

void add_bias(const WeightTensor& bias, const LinearProblem& p, int64_t n_begin, int64_t n_end) {
    with_weight_reader(bias.data, bias.dtype, [&](auto read) {
        for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = n_begin; j < n_end; ++j) p.y[i * p.n + j] += read(j);
    });
}

}  // namespace

void linear(const float* x, int64_t m, const WeightTensor& w, const WeightTensor* bias, float* y,
            ThreadPool& pool) {
    CHECK_EQ(w.shape.size(), 2u) << "linear weight must be 2-D";
    CHECK(w.present());
    const bool has_bias = bias != nullptr && bias->present();
    if (has_bias) {
        CHECK_EQ(bias->num_elements(), w.rows()) << "linear bias size";
    }
    const LinearProblem p{x, w.data, w.dtype, y, m, w.rows(), w.cols()};
    if (m <= 0 || p.n == 0) return;
    if (p.k == 0) {
        std::fill(y, y + m * p.n, 0.0f);
        if (has_bias) add_bias(*bias, p, 0, p.n);
        return;
    }

    const KernelTable& kernels = active_kernels();
    const bool use_gemm = m > kernels.max_gemv_rows;  // GEMV streams each weight once for all m rows
    const int64_t unit = use_gemm ? kernels.gemm_panel_cols : 16;  // columns split at multiples of this
    const int64_t num_units = (p.n + unit - 1) / unit;
    const int num_threads = pool.num_threads();
    pool.run([&](int t) {
        int64_t n_begin = std::min(p.n, num_units * t / num_threads * unit);
        int64_t n_end = std::min(p.n, num_units * (t + 1) / num_threads * unit);
        if (n_begin >= n_end) return;
        if (use_gemm) {
            kernels.gemm(p, n_begin, n_end, thread_scratch(gemm_scratch_floats(m)));
        } else {
            kernels.gemv(p, n_begin, n_end, thread_scratch(gemv_scratch_floats(m, p.k)));
        }
        if (has_bias) add_bias(*bias, p, n_begin, n_end);
    });
}

}  // namespace hichat::cpu
