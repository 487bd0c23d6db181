#include "backend/cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"

namespace hichat::cuda {

DeviceBuffer::DeviceBuffer(size_t num_bytes) : num_bytes_(num_bytes) {
    if (num_bytes > 0) CUDA_CHECK(cudaMalloc(&data_, num_bytes));
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t num_bytes) {
    DeviceBuffer buffer;
    if (num_bytes == 0) return buffer;
    const cudaError_t err = cudaMalloc(&buffer.data_, num_bytes);
    if (err != cudaSuccess) {
        cudaGetLastError();  // an allocation failure is not sticky; clear it for the next call
        return Status(StatusCode::kInternal, "cudaMalloc of " + std::to_string(num_bytes) +
                                                 " bytes failed: " + cudaGetErrorString(err));
    }
    buffer.num_bytes_ = num_bytes;
    return buffer;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        num_bytes_ = std::exchange(other.num_bytes_, 0);
    }
    return *this;
}

void DeviceBuffer::release() {
    if (data_ != nullptr) CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    num_bytes_ = 0;
}

}  // namespace hichat::cuda
