#include "backend/cuda/cuda_event.h"

#include <string>
#include <utility>

namespace hichat::cuda {

CudaEvent::~CudaEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
    if (this != &other) {
        if (event_ != nullptr) cudaEventDestroy(event_);
        event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
}

Result<CudaEvent> CudaEvent::create() {
    CudaEvent e;
    const cudaError_t err = cudaEventCreateWithFlags(&e.event_, cudaEventDisableTiming);
    if (err != cudaSuccess) return internal_error(std::string("cudaEventCreateWithFlags: ") + cudaGetErrorString(err));
    return e;
}

}  // namespace hichat::cuda
