// kv_pool_blocks(): how many KV blocks a runner allocates. Both runners take what their memory budget
// holds, but never more than max_num_seqs full contexts: the scheduler can never have more blocks in
// use at once (every running sequence holds at most ceil(context / block_size) blocks).
#pragma once

#include <cstdint>

namespace hichat::executor {

struct KvPoolSizing {
    int64_t budget_bytes = 0;      // memory the pool may take (free device memory x fraction, RAM share)
    int64_t bytes_per_block = 0;   // K and V of every layer for one block
    int max_num_seqs = 1;          // sequences in flight at most (values < 1 count as 1)
    int context_tokens = 0;        // the longest sequence (prompt + output)
    int block_size_tokens = 16;
};

// min(budget_bytes / bytes_per_block, max_num_seqs * ceil(context_tokens / block_size_tokens)),
// clamped to [0, INT32_MAX].
int kv_pool_blocks(const KvPoolSizing& s);

}  // namespace hichat::executor
