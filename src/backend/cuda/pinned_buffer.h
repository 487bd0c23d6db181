// PinnedBuffer: the one RAII owner of one page-locked host allocation (cudaMallocHost), the staging
// area for asynchronous copies. Move-only; owned by whoever allocated it.
#pragma once

#include <cstddef>

#include "base/status.h"

namespace hichat::cuda {

class PinnedBuffer {
public:
    PinnedBuffer() = default;
    ~PinnedBuffer();
    PinnedBuffer(PinnedBuffer&& other) noexcept;
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    static Result<PinnedBuffer> allocate(size_t num_bytes);

    void* data() const { return data_; }
    size_t num_bytes() const { return num_bytes_; }

private:
    void release();

    void* data_ = nullptr;
    size_t num_bytes_ = 0;
};

}  // namespace hichat::cuda
