#include "backend/cuda/cuda_graph.h"

#include <string>
#include <utility>

namespace hichat::cuda {

CudaGraph::~CudaGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
}

CudaGraph::CudaGraph(CudaGraph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
    if (this != &other) {
        if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
        exec_ = std::exchange(other.exec_, nullptr);
    }
    return *this;
}

Result<CudaGraph> CudaGraph::capture(cudaStream_t stream, const std::function<void()>& enqueue) {
    cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess) return internal_error(std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(err));
    enqueue();
    cudaGraph_t graph = nullptr;
    err = cudaStreamEndCapture(stream, &graph);
    if (err != cudaSuccess) return internal_error(std::string("cudaStreamEndCapture: ") + cudaGetErrorString(err));
    CudaGraph g;
    err = cudaGraphInstantiate(&g.exec_, graph, 0);
    cudaGraphDestroy(graph);
    if (err != cudaSuccess) return internal_error(std::string("cudaGraphInstantiate: ") + cudaGetErrorString(err));
    return g;
}

}  // namespace hichat::cuda
