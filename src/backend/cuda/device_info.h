// Device discovery that never aborts: safe on machines with no driver and no GPU (CI).
#pragma once

namespace hichat::cuda {

// True when the CUDA runtime finds at least one usable device. With no driver the runtime keeps
// answering its init error (cudaErrorInsufficientDriver / cudaErrorNoDevice) to every later call.
bool cuda_device_available();

// Multiprocessors of the current device; 0 when there is none.
int cuda_num_sms();

}  // namespace hichat::cuda
