#include "executor/cuda_weights.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "base/dtype.h"
#include "model/fp8_dequant.h"

namespace hichat::executor {
namespace {

using model::WeightTensor;

// Appends `t` (any stored dtype; FP8 dequantized with its scales) to `out` as bf16 bits.
void append_bf16(const WeightTensor& t, std::vector<uint16_t>& out) {
    const int64_t n = t.num_elements();
    const size_t base = out.size();
    out.resize(base + static_cast<size_t>(n));
    if (t.dtype == DType::kF8E4M3) return model::dequantize_fp8_to_bf16(t, out.data() + base);
    const auto* bytes = static_cast<const unsigned char*>(t.data);
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        float f = 0.0f;
        switch (t.dtype) {
            case DType::kBF16:
                std::memcpy(&h, bytes + 2 * i, 2);
                out[base + static_cast<size_t>(i)] = h;
                continue;
            case DType::kF16:
                std::memcpy(&h, bytes + 2 * i, 2);
                f = f16_to_f32(h);
                break;
            case DType::kF32:
                std::memcpy(&f, bytes + 4 * i, 4);
                break;
            case DType::kF8E4M3:  // dequantized above
                break;
        }
        out[base + static_cast<size_t>(i)] = f32_to_bf16(f);
    }
}

Result<cuda::DeviceBuffer> to_device(std::initializer_list<const WeightTensor*> parts, size_t& total) {
    std::vector<uint16_t> host;
    for (const WeightTensor* t : parts) {
        if (t->present()) append_bf16(*t, host);
    }
    if (host.empty()) return cuda::DeviceBuffer();
    auto buf = cuda::DeviceBuffer::allocate(host.size() * sizeof(uint16_t));
    if (!buf.ok()) return buf.status();
    if (cudaMemcpy(buf->data(), host.data(), host.size() * 2, cudaMemcpyHostToDevice) != cudaSuccess) {
        return Status(StatusCode::kInternal, "cudaMemcpy of weights failed");
    }
    total += host.size() * 2;
    return std::move(buf).value();
}

}  // namespace

Result<CudaWeights> CudaWeights::upload(const model::Checkpoint& checkpoint) {
    const model::ModelConfig& cfg = checkpoint.config();
    const model::ModelWeights& w = checkpoint.weights();
    CudaWeights out;
    auto upload = [&](cuda::DeviceBuffer& dst, std::initializer_list<const WeightTensor*> parts) -> Status {
        auto b = to_device(parts, out.num_bytes);
        if (!b.ok()) return b.status();
        dst = std::move(b).value();
        return ok_status();
    };
    HICHAT_RETURN_IF_ERROR(upload(out.embed, {&w.embed_tokens}));
    HICHAT_RETURN_IF_ERROR(upload(out.final_norm, {&w.final_norm}));
    if (!cfg.tie_word_embeddings) HICHAT_RETURN_IF_ERROR(upload(out.lm_head, {&w.lm_head}));
    for (const model::LayerWeights& l : w.layers) {
        CudaLayerWeights d;
        HICHAT_RETURN_IF_ERROR(upload(d.attn_norm, {&l.attn_norm}));
        HICHAT_RETURN_IF_ERROR(upload(d.qkv, {&l.q_proj, &l.k_proj, &l.v_proj}));
        HICHAT_RETURN_IF_ERROR(upload(d.qkv_bias, {&l.q_bias, &l.k_bias, &l.v_bias}));
        HICHAT_RETURN_IF_ERROR(upload(d.q_norm, {&l.q_norm}));
        HICHAT_RETURN_IF_ERROR(upload(d.k_norm, {&l.k_norm}));
        HICHAT_RETURN_IF_ERROR(upload(d.o_proj, {&l.o_proj}));
        HICHAT_RETURN_IF_ERROR(upload(d.ffn_norm, {&l.ffn_norm}));
        HICHAT_RETURN_IF_ERROR(upload(d.gate_up, {&l.gate_proj, &l.up_proj}));
        HICHAT_RETURN_IF_ERROR(upload(d.down, {&l.down_proj}));
        out.layers.push_back(std::move(d));
    }
    return out;
}

}  // namespace hichat::executor
