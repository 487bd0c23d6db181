// DeviceBuffer: the one RAII owner of one cudaMalloc allocation (style rule 9). Move-only.
// This file and device_buffer.cpp are the only places that call cudaMalloc / cudaFree.
// Not thread-safe; owned by whoever allocated it (KV pool, weights, workspace, runner).
#pragma once

#include <cstddef>

#include "base/status.h"

namespace hichat::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;                  // empty: data() == nullptr, size 0
    explicit DeviceBuffer(size_t num_bytes);   // CHECK-fails when the device cannot provide it
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // Resource pressure is not an invariant: out of device memory comes back as a Status naming the size.
    static Result<DeviceBuffer> allocate(size_t num_bytes);

    void* data() const { return data_; }
    template <typename T>
    T* as() const { return static_cast<T*>(data_); }
    size_t num_bytes() const { return num_bytes_; }
    bool empty() const { return data_ == nullptr; }

private:
    void release();

    void* data_ = nullptr;
    size_t num_bytes_ = 0;
};

}  // namespace hichat::cuda
