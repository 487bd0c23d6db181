#include "executor/kv_pool_size.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace hichat::executor {

int kv_pool_blocks(const KvPoolSizing& s) {
    CHECK_GT(s.bytes_per_block, 0);
    CHECK_GT(s.block_size_tokens, 0);
    const int64_t fit = std::max<int64_t>(0, s.budget_bytes) / s.bytes_per_block;
    const int64_t blocks_per_seq =
        (std::max(0, s.context_tokens) + int64_t{s.block_size_tokens} - 1) / s.block_size_tokens;
    const int64_t needed = blocks_per_seq * std::max(1, s.max_num_seqs);
    return static_cast<int>(std::min<int64_t>(std::min(fit, needed), std::numeric_limits<int32_t>::max()));
}

}  // namespace hichat::executor
