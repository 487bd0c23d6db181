// The CPU backend's copy of a ModelWeights: every linear weight and the lm_head in one huge-page
// arena (base/huge_page_buffer.h), so that a decode step streams them at the memory's rate rather
// than through the 4 KiB pages of the safetensors maps; FP8 tensors are dequantized to bf16 on the
// way (element [n, k] = bf16(fp8(q) * scale), as transformers computes it). Everything else (norms,
// biases, the embedding rows, integer codes that on-load quantization already holds in its own arena)
// stays a view shared with the original, which must outlive this.
#pragma once

#include <cstdint>

#include "base/huge_page_buffer.h"
#include "model/weights.h"

namespace hichat::model {

class HostWeights {
public:
    // Copies with up to `threads` threads. first_layer > 0 (a runner of the later layers only, beside a
    // GPU that runs the others and the lm_head): the layers before it and the lm_head stay views.
    HostWeights(const ModelWeights& weights, int threads, int first_layer = 0);
    HostWeights(const HostWeights&) = delete;
    HostWeights& operator=(const HostWeights&) = delete;

    const ModelWeights& weights() const { return weights_; }
    int64_t num_copied() const { return num_copied_; }
    int64_t num_dequantized() const { return num_dequantized_; }
    int64_t size_bytes() const { return static_cast<int64_t>(arena_.size_bytes()); }

private:
    ModelWeights weights_;
    HugePageBuffer arena_;
    int64_t num_copied_ = 0, num_dequantized_ = 0;
};

}  // namespace hichat::model
