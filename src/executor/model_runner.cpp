#include "executor/model_runner.h"

#include "base/check.h"

namespace hichat::executor {

void ModelRunner::forward_argmax(const ForwardBatch& batch, std::vector<int32_t>& ids) {
    forward(batch, argmax_logits_);
    const auto vocab = static_cast<size_t>(model_config().vocab_size);
    const size_t rows = argmax_logits_.size() / vocab;
    ids.resize(rows);
    for (size_t r = 0; r < rows; ++r) {
        const float* row = argmax_logits_.data() + r * vocab;
        size_t best = 0;
        for (size_t i = 1; i < vocab; ++i) {
            if (row[i] > row[best]) best = i;
        }
        ids[r] = static_cast<int32_t>(best);
    }
}

void ModelRunner::forward_sample(const ForwardBatch&, std::span<const RowSampling>, std::vector<int32_t>&) {
    CHECK(false) << "forward_sample() on a runner that does not sample on the device";
}

}  // namespace hichat::executor
