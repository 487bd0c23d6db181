// CUDA_CHECK: for CUDA calls whose failure is a broken invariant or a dead device (style rule 10).
// Logs file, line, the call and the error string, then aborts. Never for user input.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

namespace hichat::cuda::detail {

[[noreturn]] inline void cuda_check_failed(cudaError_t err, const char* call, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: CUDA_CHECK failed: %s: %s (%s)\n", file, line, call, cudaGetErrorName(err),
                 cudaGetErrorString(err));
    std::fflush(stderr);
    std::abort();
}

}  // namespace hichat::cuda::detail

#define CUDA_CHECK(call)                                                                          \
    do {                                                                                          \
        const cudaError_t hichat_cuda_err_ = (call);                                              \
        if (hichat_cuda_err_ != cudaSuccess)                                                      \
            ::hichat::cuda::detail::cuda_check_failed(hichat_cuda_err_, #call, __FILE__, __LINE__); \
    } while (0)
