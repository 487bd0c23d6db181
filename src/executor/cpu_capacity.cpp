#include "executor/cpu_capacity.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "backend/cpu/ops.h"
#include "base/dtype.h"
#include "base/thread_pool.h"

namespace hichat::executor {
namespace {

// The shortest of three timed runs of y = x w^T after a warm-up, in seconds.
double best_time(const std::vector<float>& x, int64_t m, const model::WeightTensor& w, std::vector<float>& y,
                 ThreadPool& pool) {
    double best = 1e30;
    for (int i = 0; i < 4; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        cpu::linear(x.data(), m, w, nullptr, y.data(), pool);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0) best = std::min(best, s);
    }
    return std::max(best, 1e-9);
}

}  // namespace

CpuCapacity measure_cpu_capacity(int threads) {
    const int n = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    ThreadPool pool(n);
    constexpr int64_t kRows = 16384, kCols = 4096, kTokens = 64;   // 128 MiB of bf16
    std::vector<uint16_t> weight(static_cast<size_t>(kRows * kCols));
    for (size_t i = 0; i < weight.size(); ++i) weight[i] = f32_to_bf16(static_cast<float>(i % 251) * 1e-3f - 0.125f);
    std::vector<float> x(static_cast<size_t>(kTokens * kCols), 0.01f), y(static_cast<size_t>(kTokens * kRows));
    const model::WeightTensor big{weight.data(), DType::kBF16, {kRows, kCols}, {}};
    const model::WeightTensor square{weight.data(), DType::kBF16, {kCols, kCols}, {}};
    CpuCapacity c;
    c.memory_bytes_per_s = static_cast<double>(weight.size() * 2) / best_time(x, 1, big, y, pool);
    c.flops_per_s = 2.0 * kTokens * kCols * kCols / best_time(x, kTokens, square, y, pool);
    return c;
}

}  // namespace hichat::executor
