#include "model/host_weights.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "model/fp8_dequant.h"

namespace hichat::model {
namespace {

constexpr int64_t kAlign = 4096;   // each tensor starts on its own page: rows never share a line

bool copied_here(const WeightTensor& t) {
    return t.present() && (t.dtype == DType::kBF16 || t.dtype == DType::kF16 || t.dtype == DType::kF32 ||
                           t.dtype == DType::kF8E4M3);
}

int64_t bytes_here(const WeightTensor& t) {
    const DType stored = t.dtype == DType::kF8E4M3 ? DType::kBF16 : t.dtype;
    return t.num_elements() * dtype_size_bytes(stored);
}

}  // namespace

HostWeights::HostWeights(const ModelWeights& weights, int threads, int first_layer) : weights_(weights) {
    const bool tied = weights_.lm_head.data == weights_.embed_tokens.data;
    std::vector<WeightTensor*> slots;
    if (first_layer == 0 && copied_here(weights_.lm_head)) slots.push_back(&weights_.lm_head);
    for (size_t i = static_cast<size_t>(std::max(first_layer, 0)); i < weights_.layers.size(); ++i) {
        LayerWeights& l = weights_.layers[i];
        for (WeightTensor* t : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
            if (copied_here(*t)) slots.push_back(t);
        }
    }
    std::vector<int64_t> offsets;
    int64_t total = 0;
    for (const WeightTensor* t : slots) {
        offsets.push_back(total);
        total += (bytes_here(*t) + kAlign - 1) / kAlign * kAlign;
    }
    arena_ = HugePageBuffer(static_cast<size_t>(total));
    auto* base = static_cast<std::byte*>(arena_.data());

    auto copy = [&](size_t i) {
        WeightTensor& t = *slots[i];
        void* dst = base + offsets[i];
        if (t.dtype == DType::kF8E4M3) {
            dequantize_fp8_to_bf16(t, static_cast<uint16_t*>(dst));
            t = WeightTensor{dst, DType::kBF16, t.shape, {}};
        } else {
            std::memcpy(dst, t.data, static_cast<size_t>(bytes_here(t)));
            t.data = dst;
        }
    };
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < slots.size(); i = next++) copy(i);
    };
    for (const WeightTensor* t : slots) num_dequantized_ += t->dtype == DType::kF8E4M3 ? 1 : 0;
    std::vector<std::thread> pool;
    for (int i = 1; i < std::max(threads, 1); ++i) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
    num_copied_ = static_cast<int64_t>(slots.size());
    // A tied table is read row by row for the embeddings: from the copy too.
    if (tied && weights_.lm_head.dtype == weights_.embed_tokens.dtype) weights_.embed_tokens.data = weights_.lm_head.data;
}

}  // namespace hichat::model
