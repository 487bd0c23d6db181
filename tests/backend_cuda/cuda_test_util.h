// Helpers for the CUDA op tests: skip without a device, host<->device copies, bf16 vectors, poison
// and error measures. Every op is compared with a CPU reference (backend/cpu/ops.h or a loop here).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_info.h"
#include "base/dtype.h"
#include "base/thread_pool.h"
#include "model/weights.h"

namespace hichat::cuda::testing {

// The CPU reference's thread pool, shared by the tests of one binary.
inline ThreadPool& pool() {
    static ThreadPool p(static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency()))));
    return p;
}

// Every CUDA test derives from this: on a machine with no device (CI) the test shows as skipped.
class CudaTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "SKIPPED: no CUDA device";
    }
};

// A fresh seed per call, printed by the caller through SCOPED_TRACE so a failure can be replayed.
inline uint32_t fresh_seed() {
    static std::random_device device;
    return device();
}

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// bf16 values as raw bits, and their exact float values.
inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
    return out;
}
inline std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
    return out;
}

inline model::WeightTensor bf16_weight(const std::vector<uint16_t>& bits, std::vector<int64_t> shape) {
    return model::WeightTensor{bits.data(), DType::kBF16, std::move(shape)};
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& host) {
    DeviceBuffer buf(host.size() * sizeof(T));
    if (!host.empty()) CUDA_CHECK(cudaMemcpy(buf.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return buf;
}

template <typename T>
std::vector<T> download(const DeviceBuffer& buf, size_t n) {
    std::vector<T> host(n);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (n > 0) CUDA_CHECK(cudaMemcpy(host.data(), buf.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

// All bytes 0xff: NaN as float and as bf16, -1 as int32. Outputs are poisoned before each run.
inline DeviceBuffer poisoned(size_t num_bytes) {
    DeviceBuffer buf(num_bytes);
    CUDA_CHECK(cudaMemset(buf.data(), 0xff, num_bytes));
    return buf;
}

inline size_t count_nan(const std::vector<float>& v) {
    size_t n = 0;
    for (float x : v) n += std::isnan(x) ? 1 : 0;
    return n;
}

// ||out - ref|| / ||ref||, in double; NaN anywhere gives NaN (which fails every < check).
inline double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
    EXPECT_EQ(out.size(), ref.size());
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < out.size() && i < ref.size(); ++i) {
        const double d = double{out[i]} - ref[i];
        num += d * d;
        den += double{ref[i]} * ref[i];
    }
    return std::sqrt(num) / std::sqrt(den > 0.0 ? den : 1.0);
}

}  // namespace hichat::cuda::testing
