#include "backend/cuda/device_info.h"

#include <cuda_runtime_api.h>

namespace hichat::cuda {

bool cuda_device_available() {
    int num_devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&num_devices);
    if (err != cudaSuccess) {
        cudaGetLastError();  // no driver / no device: not sticky, but leave nothing behind
        return false;
    }
    return num_devices > 0;
}

int cuda_num_sms() {
    int device = 0;
    int num_sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return num_sms;
}

}  // namespace hichat::cuda
