#include "executor/cuda_weights.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "base/check.h"
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
Result<cuda::DeviceBuffer> copy_to_device(const T* host, size_t count, size_t& total) {
    if (count == 0) return cuda::DeviceBuffer();
    auto buf = cuda::DeviceBuffer::allocate(count * sizeof(T));
    if (!buf.ok()) return buf.status();
    if (cudaMemcpy(buf->data(), host, count * sizeof(T), cudaMemcpyHostToDevice) != cudaSuccess) {
        return Status(StatusCode::kInternal, "cudaMemcpy of weights failed");
    }
    total += count * sizeof(T);
    return std::move(buf).value();
}

Result<cuda::DeviceBuffer> to_device(std::initializer_list<const WeightTensor*> parts, size_t& total) {
    std::vector<uint16_t> host;
    for (const WeightTensor* t : parts) {
        if (t->present()) append_bf16(*t, host);
    }
    return copy_to_device(host.data(), host.size(), total);
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

// One layer's tensors packed into host bytes, each at a kAlign-aligned offset, with views at the
// nominal base kPackBase (rebased() moves them to where the bytes land).
constexpr size_t kAlign = 256;
const auto kPackBase = reinterpret_cast<void*>(uintptr_t{1} << 20);

class LayerPacker {
public:
    TensorView put(const void* src, size_t bytes) {
        if (bytes == 0) return {};
        const size_t at = (blob_.size() + kAlign - 1) / kAlign * kAlign;
        blob_.resize(at + bytes);
        std::memcpy(blob_.data() + at, src, bytes);
        return {reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(kPackBase) + at), bytes};
    }
    // The parts (any stored dtype) as one bf16 tensor; absent parts are skipped.
    TensorView put_bf16(std::initializer_list<const WeightTensor*> parts) {
        std::vector<uint16_t> host;
        for (const WeightTensor* t : parts) {
            if (t->present()) append_bf16(*t, host);
        }
        return put(host.data(), host.size() * 2);
    }
    // The parts' E4M3 bytes one after another, and each row's fp32 scale.
    CudaLinear put_fp8(std::initializer_list<const WeightTensor*> parts) {
        std::vector<uint8_t> bytes;
        std::vector<float> scales;
        for (const WeightTensor* t : parts) {
            const auto* q = static_cast<const uint8_t*>(t->data);
            bytes.insert(bytes.end(), q, q + t->num_elements());
            for (int64_t r = 0; r < t->rows(); ++r) {
                scales.push_back(load_as_f32(t->scales.data, t->scales.dtype, r / t->scales.block_rows));
            }
        }
        CudaLinear out;
        out.weight = put(bytes.data(), bytes.size());
        out.row_scale = put(scales.data(), scales.size() * 4);
        return out;
    }
    const std::vector<uint8_t>& blob() const { return blob_; }

private:
    std::vector<uint8_t> blob_;
};

TensorView rebase(const TensorView& v, const void* from, void* to) {
    if (v.empty()) return v;
    const auto offset = reinterpret_cast<uintptr_t>(v.ptr) - reinterpret_cast<uintptr_t>(from);
    return {static_cast<char*>(to) + offset, v.bytes};
}

CudaLinear rebase(const CudaLinear& l, const void* from, void* to) {
    return {rebase(l.weight, from, to), rebase(l.row_scale, from, to)};
}

}  // namespace

CudaLayerWeights CudaLayerWeights::rebased(const void* from, void* to) const {
    return {.attn_norm = rebase(attn_norm, from, to),
            .qkv = rebase(qkv, from, to),
            .qkv_bias = rebase(qkv_bias, from, to),
            .q_norm = rebase(q_norm, from, to),
            .k_norm = rebase(k_norm, from, to),
            .o_proj = rebase(o_proj, from, to),
            .ffn_norm = rebase(ffn_norm, from, to),
            .gate_up = rebase(gate_up, from, to),
            .down = rebase(down, from, to)};
}

Result<CudaWeights> CudaWeights::upload(const model::Checkpoint& checkpoint,
                                       const std::function<bool(int64_t n, int64_t k)>& fp8_ok, int num_streamed,
                                       int num_cpu) {
    const model::ModelConfig& cfg = checkpoint.config();
    const model::ModelWeights& w = checkpoint.weights();
    CHECK(num_streamed >= 0 && num_cpu >= 0 && num_streamed + num_cpu <= cfg.num_layers)
        << num_streamed << " streamed and " << num_cpu << " CPU layers";
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
    const int num_device = cfg.num_layers - num_cpu, first_streamed = num_device - num_streamed;
    for (int i = 0; i < num_device; ++i) {
        const model::LayerWeights& l = w.layers[static_cast<size_t>(i)];
        LayerPacker pack;
        auto linear = [&](std::initializer_list<const WeightTensor*> parts) {
            if (!keeps_fp8(parts, fp8_ok)) return CudaLinear{.weight = pack.put_bf16(parts)};
            ++out.num_fp8_linears;
            return pack.put_fp8(parts);
        };
        CudaLayerWeights d;
        d.attn_norm = pack.put_bf16({&l.attn_norm});
        d.qkv = linear({&l.q_proj, &l.k_proj, &l.v_proj});
        d.qkv_bias = pack.put_bf16({&l.q_bias, &l.k_bias, &l.v_bias});
        d.q_norm = pack.put_bf16({&l.q_norm});
        d.k_norm = pack.put_bf16({&l.k_norm});
        d.o_proj = linear({&l.o_proj});
        d.ffn_norm = pack.put_bf16({&l.ffn_norm});
        d.gate_up = linear({&l.gate_proj, &l.up_proj});
        d.down = linear({&l.down_proj});
        const std::vector<uint8_t>& blob = pack.blob();
        if (i < first_streamed) {
            auto device = copy_to_device(blob.data(), blob.size(), out.num_bytes);
            if (!device.ok()) return device.status();
            out.layers.push_back(d.rebased(kPackBase, device->data()));
            out.device_blobs.push_back(std::move(device).value());
            continue;
        }
        auto host = cuda::PinnedBuffer::allocate(blob.size());
        if (!host.ok()) return host.status();
        std::memcpy(host->data(), blob.data(), blob.size());
        out.layers.push_back(d.rebased(kPackBase, host->data()));
        out.host_blobs.push_back(std::move(host).value());
        out.num_host_bytes += blob.size();
        out.max_host_blob_bytes = std::max(out.max_host_blob_bytes, blob.size());
    }
    return out;
}

}  // namespace hichat::executor
