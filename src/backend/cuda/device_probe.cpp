#include "backend/cuda/device_probe.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/pinned_buffer.h"

namespace hichat::cuda {
namespace {

Status cuda_status(cudaError_t err, const char* what) {
    if (err == cudaSuccess) return ok_status();
    cudaGetLastError();
    return Status(StatusCode::kInternal, std::string(what) + ": " + cudaGetErrorString(err));
}

// The shortest of three runs of `copy` on a stream, in seconds, timed by events.
Result<double> best_of_three(cudaStream_t stream, const auto& copy) {
    cudaEvent_t begin = nullptr, end = nullptr;
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&begin), "cudaEventCreate"));
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&end), "cudaEventCreate"));
    float best_ms = 0;
    Status status = ok_status();
    for (int i = 0; i < 3 && status.ok(); ++i) {
        float ms = 0;
        status = cuda_status(cudaEventRecord(begin, stream), "cudaEventRecord");
        if (status.ok()) status = cuda_status(copy(), "cudaMemcpyAsync");
        if (status.ok()) status = cuda_status(cudaEventRecord(end, stream), "cudaEventRecord");
        if (status.ok()) status = cuda_status(cudaEventSynchronize(end), "cudaEventSynchronize");
        if (status.ok()) status = cuda_status(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
        if (status.ok() && (i == 0 || ms < best_ms)) best_ms = ms;
    }
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    if (!status.ok()) return status;
    return std::max(best_ms, 1e-3f) / 1e3;
}

}  // namespace

Result<DeviceProbe> probe_device(size_t copy_bytes) {
    DeviceProbe p;
    size_t free_bytes = 0, total_bytes = 0;
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
    p.free_bytes = static_cast<int64_t>(free_bytes);
    p.total_bytes = static_cast<int64_t>(total_bytes);
    int device = 0, sms = 0, clock_khz = 0;
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count"));
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device), "clock rate"));
    p.bf16_flops_per_s = static_cast<double>(sms) * clock_khz * 1e3 * 4096.0;

    auto host = PinnedBuffer::allocate(copy_bytes);
    if (!host.ok()) return host.status();
    auto a = DeviceBuffer::allocate(copy_bytes);
    if (!a.ok()) return a.status();
    auto b = DeviceBuffer::allocate(copy_bytes);
    if (!b.ok()) return b.status();
    cudaStream_t stream = nullptr;
    HICHAT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
    auto h2d = best_of_three(stream, [&] {
        return cudaMemcpyAsync(a->data(), host->data(), copy_bytes, cudaMemcpyHostToDevice, stream);
    });
    auto d2d = best_of_three(stream, [&] {
        return cudaMemcpyAsync(b->data(), a->data(), copy_bytes, cudaMemcpyDeviceToDevice, stream);
    });
    cudaStreamDestroy(stream);
    if (!h2d.ok()) return h2d.status();
    if (!d2d.ok()) return d2d.status();
    p.h2d_bytes_per_s = static_cast<double>(copy_bytes) / *h2d;
    p.memory_bytes_per_s = 2.0 * static_cast<double>(copy_bytes) / *d2d;
    return p;
}

}  // namespace hichat::cuda
