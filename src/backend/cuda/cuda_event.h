// CudaEvent: the one RAII owner of one CUDA event (timing disabled): recorded on a stream after some
// work, then waited for by the host. Move-only.
#pragma once

#include <cuda_runtime_api.h>

#include "base/status.h"

namespace hichat::cuda {

class CudaEvent {
public:
    CudaEvent() = default;
    ~CudaEvent();
    CudaEvent(CudaEvent&& other) noexcept;
    CudaEvent& operator=(CudaEvent&& other) noexcept;
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    static Result<CudaEvent> create();

    cudaError_t record(cudaStream_t stream) const { return cudaEventRecord(event_, stream); }
    // Makes the work enqueued on `stream` from now on wait, on the device, for the work before the last
    // record(); the host does not wait.
    cudaError_t make_wait(cudaStream_t stream) const { return cudaStreamWaitEvent(stream, event_, 0); }
    // Blocks until the work before the last record() is done.
    cudaError_t synchronize() const { return cudaEventSynchronize(event_); }

private:
    cudaEvent_t event_ = nullptr;
};

}  // namespace hichat::cuda
