// CudaWeights: the checkpoint's tensors on the device as bf16, with q/k/v and gate/up fused into one
// matrix each (one GEMM instead of three / two). FP8 checkpoints with per-tensor or per-channel
// scales keep their linear weights in FP8 with a scale per row (a fused matrix's parts keep their own
// scales, so fusing is exact); block-scaled ones, and matrices the FP8 kernels cannot take (rows or
// columns not multiples of 16, or what fp8_ok refuses: the runner's k % 64 for the FP8 GEMV, shapes
// cuBLASLt's FP8 GEMM lacks), are dequantized to bf16. Built once from the host views; owns every
// buffer.
#pragma once

#include <functional>
#include <vector>

#include "backend/cuda/device_buffer.h"
#include "base/status.h"
#include "model/checkpoint.h"

namespace hichat::executor {

// A linear layer's weight [n, k]: bf16, or E4M3 bytes with an fp32 dequantization scale per row.
struct CudaLinear {
    cuda::DeviceBuffer weight;
    cuda::DeviceBuffer row_scale;   // [n] fp32; empty: bf16 weight
    bool fp8() const { return !row_scale.empty(); }
};

struct CudaLayerWeights {
    cuda::DeviceBuffer attn_norm;   // [hidden]
    CudaLinear qkv;                 // [(heads + 2 kv_heads) * head_dim, hidden]
    cuda::DeviceBuffer qkv_bias;    // [(heads + 2 kv_heads) * head_dim] or empty
    cuda::DeviceBuffer q_norm;      // [head_dim] or empty
    cuda::DeviceBuffer k_norm;      // [head_dim] or empty
    CudaLinear o_proj;              // [hidden, heads * head_dim]
    cuda::DeviceBuffer ffn_norm;    // [hidden]
    CudaLinear gate_up;             // [2 * intermediate, hidden]
    CudaLinear down;                // [hidden, intermediate]
};

struct CudaWeights {
    cuda::DeviceBuffer embed;       // [vocab, hidden]
    std::vector<CudaLayerWeights> layers;
    cuda::DeviceBuffer final_norm;  // [hidden]
    cuda::DeviceBuffer lm_head;     // [vocab, hidden]; empty when tied (use embed)
    size_t num_bytes = 0;
    int num_fp8_linears = 0;        // linear weights kept in FP8

    // Errors: features the CUDA path does not support (o/mlp biases), device memory exhausted.
    // fp8_ok(n, k): whether the FP8 kernels take an n x k weight (else it is dequantized to bf16).
    static Result<CudaWeights> upload(const model::Checkpoint& checkpoint,
                                      const std::function<bool(int64_t n, int64_t k)>& fp8_ok);
};

}  // namespace hichat::executor
