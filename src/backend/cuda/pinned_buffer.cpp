#include "backend/cuda/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"

namespace hichat::cuda {

Result<PinnedBuffer> PinnedBuffer::allocate(size_t num_bytes) {
    PinnedBuffer buffer;
    if (num_bytes == 0) return buffer;
    const cudaError_t err = cudaMallocHost(&buffer.data_, num_bytes);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return Status(StatusCode::kInternal, "cudaMallocHost of " + std::to_string(num_bytes) +
                                                 " bytes failed: " + cudaGetErrorString(err));
    }
    buffer.num_bytes_ = num_bytes;
    return buffer;
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        num_bytes_ = std::exchange(other.num_bytes_, 0);
    }
    return *this;
}

void PinnedBuffer::release() {
    if (data_ != nullptr) CUDA_CHECK(cudaFreeHost(data_));
    data_ = nullptr;
    num_bytes_ = 0;
}

}  // namespace hichat::cuda
