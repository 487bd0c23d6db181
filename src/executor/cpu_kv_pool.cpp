#include "executor/cpu_kv_pool.h"

#include <cstring>

#include "base/check.h"

namespace hichat::executor {

CpuKvPool::CpuKvPool(int num_layers, int num_kv_heads, int head_dim, int num_blocks, int block_size_tokens)
    : num_layers_(num_layers),
      num_blocks_(num_blocks),
      block_size_tokens_(block_size_tokens),
      row_floats_(static_cast<int64_t>(num_kv_heads) * head_dim),
      layer_floats_(static_cast<int64_t>(num_blocks) * block_size_tokens * row_floats_),
      storage_(static_cast<size_t>(2 * num_layers * layer_floats_) * sizeof(float)) {
    CHECK_GT(block_size_tokens, 0);
}

// Block b of array a (2 * layer + k/v) is one run of block_size * row_floats floats.
void CpuKvPool::save_block(int32_t block, float* out) const {
    CHECK(block >= 0 && block < num_blocks_) << "block " << block;
    const int64_t run = block_size_tokens_ * row_floats_;
    for (int a = 0; a < 2 * num_layers_; ++a) std::memcpy(out + a * run, layer_base(a) + block * run, run * sizeof(float));
}

void CpuKvPool::load_block(int32_t block, const float* in) {
    CHECK(block >= 0 && block < num_blocks_) << "block " << block;
    const int64_t run = block_size_tokens_ * row_floats_;
    for (int a = 0; a < 2 * num_layers_; ++a) std::memcpy(layer_base(a) + block * run, in + a * run, run * sizeof(float));
}

int64_t CpuKvPool::slot(std::span<const int32_t> block_table, int pos) const {
    const auto index = static_cast<size_t>(pos / block_size_tokens_);
    CHECK_LT(index, block_table.size()) << "position " << pos << " beyond the sequence's blocks";
    const int32_t block = block_table[index];
    CHECK(block >= 0 && block < num_blocks_) << "block " << block;
    return static_cast<int64_t>(block) * block_size_tokens_ + pos % block_size_tokens_;
}

}  // namespace hichat::executor
