// CudaWeights: the checkpoint's tensors on the device as bf16, with q/k/v and gate/up fused into one
// matrix each (one GEMM instead of three / two). Built once from the host views; owns every buffer.
#pragma once

#include <vector>

#include "backend/cuda/device_buffer.h"
#include "base/status.h"
#include "model/checkpoint.h"

namespace hichat::executor {

struct CudaLayerWeights {
    cuda::DeviceBuffer attn_norm;   // [hidden]
    cuda::DeviceBuffer qkv;         // [(heads + 2 kv_heads) * head_dim, hidden]
    cuda::DeviceBuffer qkv_bias;    // [(heads + 2 kv_heads) * head_dim] or empty
    cuda::DeviceBuffer q_norm;      // [head_dim] or empty
    cuda::DeviceBuffer k_norm;      // [head_dim] or empty
    cuda::DeviceBuffer o_proj;      // [hidden, heads * head_dim]
    cuda::DeviceBuffer ffn_norm;    // [hidden]
    cuda::DeviceBuffer gate_up;     // [2 * intermediate, hidden]
    cuda::DeviceBuffer down;        // [hidden, intermediate]
};

struct CudaWeights {
    cuda::DeviceBuffer embed;       // [vocab, hidden]
    std::vector<CudaLayerWeights> layers;
    cuda::DeviceBuffer final_norm;  // [hidden]
    cuda::DeviceBuffer lm_head;     // [vocab, hidden]; empty when tied (use embed)
    size_t num_bytes = 0;

    // Errors: features the CUDA path does not support (o/mlp biases), device memory exhausted.
    static Result<CudaWeights> upload(const model::Checkpoint& checkpoint);
};

}  // namespace hichat::executor
