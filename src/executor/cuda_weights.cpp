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
            case DType::kI8:      // refused by choose_device
            case DType::kQ4:
            case DType::kI32:
            case DType::kI64:
                break;
        }
        out[base + static_cast<size_t>(i)] = f32_to_bf16(f);
    }
}

template <typename T>
Result<cuda::DeviceBuffer> copy_to_device(const std::vector<T>& host, size_t& total) {
    if (host.empty()) return cuda::DeviceBuffer();
    auto buf = cuda::DeviceBuffer::allocate(host.size() * sizeof(T));
    if (!buf.ok()) return buf.status();
    if (cudaMemcpy(buf->data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) {
        return Status(StatusCode::kInternal, "cudaMemcpy of weights failed");
    }
    total += host.size() * sizeof(T);
    return std::move(buf).value();
}

Result<cuda::DeviceBuffer> to_device(std::initializer_list<const WeightTensor*> parts, size_t& total) {
    std::vector<uint16_t> host;
    for (const WeightTensor* t : parts) {
        if (t->present()) append_bf16(*t, host);
    }
    return copy_to_device(host, total);
}

// Whether the fused matrix of `parts` stays FP8: every part FP8 with one scale per row (per-tensor or
// per-channel), its rows and columns multiples of 16 (the FP8 GEMM's granularity) and a shape the
// FP8 kernels take (fp8_ok).
bool keeps_fp8(std::initializer_list<const WeightTensor*> parts,
               const std::function<bool(int64_t n, int64_t k)>& fp8_ok) {
    int64_t rows = 0;
    for (const WeightTensor* t : parts) {
        if (t->dtype != DType::kF8E4M3 || t->scales.block_cols != t->cols()) return false;
        rows += t->rows();
    }
    const int64_t cols = (*parts.begin())->cols();
    return rows % 16 == 0 && cols % 16 == 0 && fp8_ok(rows, cols);
}

// The parts' E4M3 bytes one after another, and each row's scale.
Status to_device_fp8(std::initializer_list<const WeightTensor*> parts, CudaLinear& out, size_t& total) {
    std::vector<uint8_t> bytes;
    std::vector<float> scales;
    for (const WeightTensor* t : parts) {
        const auto* q = static_cast<const uint8_t*>(t->data);
        bytes.insert(bytes.end(), q, q + t->num_elements());
        for (int64_t r = 0; r < t->rows(); ++r) {
            scales.push_back(load_as_f32(t->scales.data, t->scales.dtype, r / t->scales.block_rows));
        }
    }
    auto weight = copy_to_device(bytes, total);
    if (!weight.ok()) return weight.status();
    auto scale = copy_to_device(scales, total);
    if (!scale.ok()) return scale.status();
    out.weight = std::move(weight).value();
    out.row_scale = std::move(scale).value();
    return ok_status();
}

}  // namespace

Result<CudaWeights> CudaWeights::upload(const model::Checkpoint& checkpoint,
                                       const std::function<bool(int64_t n, int64_t k)>& fp8_ok) {
    const model::ModelConfig& cfg = checkpoint.config();
    const model::ModelWeights& w = checkpoint.weights();
    CudaWeights out;
    auto upload = [&](cuda::DeviceBuffer& dst, std::initializer_list<const WeightTensor*> parts) -> Status {
        auto b = to_device(parts, out.num_bytes);
        if (!b.ok()) return b.status();
        dst = std::move(b).value();
        return ok_status();
    };
    auto linear = [&](CudaLinear& dst, std::initializer_list<const WeightTensor*> parts) -> Status {
        if (!keeps_fp8(parts, fp8_ok)) return upload(dst.weight, parts);
        ++out.num_fp8_linears;
        return to_device_fp8(parts, dst, out.num_bytes);
    };
    HICHAT_RETURN_IF_ERROR(upload(out.embed, {&w.embed_tokens}));
    HICHAT_RETURN_IF_ERROR(upload(out.final_norm, {&w.final_norm}));
    if (!cfg.tie_word_embeddings) HICHAT_RETURN_IF_ERROR(upload(out.lm_head, {&w.lm_head}));
    for (const model::LayerWeights& l : w.layers) {
        CudaLayerWeights d;
        HICHAT_RETURN_IF_ERROR(upload(d.attn_norm, {&l.attn_norm}));
        HICHAT_RETURN_IF_ERROR(linear(d.qkv, {&l.q_proj, &l.k_proj, &l.v_proj}));
        HICHAT_RETURN_IF_ERROR(upload(d.qkv_bias, {&l.q_bias, &l.k_bias, &l.v_bias}));
        HICHAT_RETURN_IF_ERROR(upload(d.q_norm, {&l.q_norm}));
        HICHAT_RETURN_IF_ERROR(upload(d.k_norm, {&l.k_norm}));
        HICHAT_RETURN_IF_ERROR(linear(d.o_proj, {&l.o_proj}));
        HICHAT_RETURN_IF_ERROR(upload(d.ffn_norm, {&l.ffn_norm}));
        HICHAT_RETURN_IF_ERROR(linear(d.gate_up, {&l.gate_proj, &l.up_proj}));
        HICHAT_RETURN_IF_ERROR(linear(d.down, {&l.down_proj}));
        out.layers.push_back(std::move(d));
    }
    return out;
}

}  // namespace hichat::executor
