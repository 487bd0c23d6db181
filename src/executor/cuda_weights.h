// CudaWeights: the checkpoint's tensors for the CUDA runner as bf16, with q/k/v and gate/up fused into
// one matrix each (one GEMM instead of three / two). FP8 checkpoints with per-tensor or per-channel
// scales keep their linear weights in FP8 with a scale per row (a fused matrix's parts keep their own
// scales, so fusing is exact); block-scaled ones, and matrices the FP8 kernels cannot take (rows or
// columns not multiples of 16, or what fp8_ok refuses: the runner's k % 64 for the FP8 GEMV, shapes
// cuBLASLt's FP8 GEMM lacks), are dequantized to bf16.
//
// Each decoder layer's tensors are packed into one blob (every tensor at a 256-byte aligned offset):
// resident layers hold theirs in one device allocation; streamed layers (issue 21: the num_streamed
// layers before the CPU's) in pinned host memory, copied whole into a device staging buffer just ahead of
// use. The same layer layout serves both: CudaLayerWeights holds views at a base address. Built once
// from the host views; owns every buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/pinned_buffer.h"
#include "base/status.h"
#include "model/checkpoint.h"

namespace hichat::executor {

// A tensor inside a layer blob: device bytes at `data` (nullptr: absent).
struct TensorView {
    void* ptr = nullptr;
    size_t bytes = 0;
    void* data() const { return ptr; }
    bool empty() const { return ptr == nullptr; }
};

// A linear layer's weight [n, k]: bf16, or E4M3 bytes with an fp32 dequantization scale per row.
struct CudaLinear {
    TensorView weight;
    TensorView row_scale;   // [n] fp32; empty: bf16 weight
    bool fp8() const { return !row_scale.empty(); }
};

struct CudaLayerWeights {
    TensorView attn_norm;   // [hidden]
    CudaLinear qkv;         // [(heads + 2 kv_heads) * head_dim, hidden]
    TensorView qkv_bias;    // [(heads + 2 kv_heads) * head_dim] or empty
    TensorView q_norm;      // [head_dim] or empty
    TensorView k_norm;      // [head_dim] or empty
    CudaLinear o_proj;      // [hidden, heads * head_dim]
    TensorView ffn_norm;    // [hidden]
    CudaLinear gate_up;     // [2 * intermediate, hidden]
    CudaLinear down;        // [hidden, intermediate]

    // The same views with blob offsets `from` moved to `to` (a layer packed at `from` copied to `to`).
    CudaLayerWeights rebased(const void* from, void* to) const;
};

struct CudaWeights {
    cuda::DeviceBuffer embed;       // [vocab, hidden]
    std::vector<CudaLayerWeights> layers;   // the layers the GPU computes (not the CPU's): resident ones
                                            // view their blobs, streamed ones host_blobs
    cuda::DeviceBuffer final_norm;  // [hidden]
    cuda::DeviceBuffer lm_head;     // [vocab, hidden]; empty when tied (use embed)
    std::vector<cuda::DeviceBuffer> device_blobs;   // [num_layers - num_streamed] each resident layer's tensors
    std::vector<cuda::PinnedBuffer> host_blobs;     // [num_streamed] each streamed layer's tensors, in layer order
    size_t max_host_blob_bytes = 0;   // the staging buffer a streamed layer needs
    size_t num_bytes = 0;             // on the device
    size_t num_host_bytes = 0;        // pinned, streamed layers
    int num_fp8_linears = 0;          // linear weights kept in FP8

    int num_streamed() const { return static_cast<int>(host_blobs.size()); }
    int first_streamed() const { return static_cast<int>(layers.size()) - num_streamed(); }

    // Errors: features the CUDA path does not support (o/mlp biases), device or pinned memory exhausted.
    // fp8_ok(n, k): whether the FP8 kernels take an n x k weight (else it is dequantized to bf16).
    // The last num_cpu layers are left out (the CPU runs them); the num_streamed before them go to
    // pinned host memory.
    static Result<CudaWeights> upload(const model::Checkpoint& checkpoint,
                                      const std::function<bool(int64_t n, int64_t k)>& fp8_ok, int num_streamed = 0,
                                      int num_cpu = 0);
};

}  // namespace hichat::executor
