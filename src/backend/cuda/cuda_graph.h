// CudaGraph: one instantiated CUDA graph, captured from the work a function enqueues on a stream.
// Owns the executable graph (cudaGraphExec_t); move-only. A replay re-runs exactly the captured
// kernels with the captured arguments, so whatever changes between replays must live in device
// memory (or pinned host memory that a captured copy reads) at the captured addresses.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "base/status.h"

namespace hichat::cuda {

class CudaGraph {
public:
    CudaGraph() = default;
    ~CudaGraph();
    CudaGraph(CudaGraph&& other) noexcept;
    CudaGraph& operator=(CudaGraph&& other) noexcept;
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    // Captures what `enqueue` puts on `stream` (nothing runs) and instantiates it.
    static Result<CudaGraph> capture(cudaStream_t stream, const std::function<void()>& enqueue);

    cudaError_t launch(cudaStream_t stream) const { return cudaGraphLaunch(exec_, stream); }

private:
    cudaGraphExec_t exec_ = nullptr;
};

}  // namespace hichat::cuda
