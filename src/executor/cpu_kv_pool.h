// CpuKvPool: the KV storage of the CPU backend, float32, paged: every layer has a K and a V array of
// [num_blocks, block_size, kv_heads * head_dim]. Which blocks belong to which sequence is decided by
// kv::BlockManager (bookkeeping only); the pool just stores. The arrays live in ZeroPages: a block
// takes memory once written, so resident memory follows the blocks in use, not the pool's size.
// Owned by CpuRunner; engine thread only.
#pragma once

#include <cstdint>
#include <span>

#include "executor/zero_pages.h"

namespace hichat::executor {

class CpuKvPool {
public:
    CpuKvPool(int num_layers, int num_kv_heads, int head_dim, int num_blocks, int block_size_tokens);

    int num_blocks() const { return num_blocks_; }
    int block_size_tokens() const { return block_size_tokens_; }
    int64_t row_floats() const { return row_floats_; }  // kv_heads * head_dim
    // K and V of every layer for one block: what save_block() writes and load_block() reads.
    int64_t block_floats() const { return 2 * num_layers_ * block_size_tokens_ * row_floats_; }
    void save_block(int32_t block, float* out) const;
    void load_block(int32_t block, const float* in);
    static int64_t bytes_per_token(int num_layers, int num_kv_heads, int head_dim) {
        return int64_t{2} * num_layers * num_kv_heads * head_dim * static_cast<int64_t>(sizeof(float));
    }

    // Row of token `pos` of the sequence whose blocks are `block_table`.
    float* key_row(int layer, std::span<const int32_t> block_table, int pos) {
        return layer_base(2 * layer) + slot(block_table, pos) * row_floats_;
    }
    float* value_row(int layer, std::span<const int32_t> block_table, int pos) {
        return layer_base(2 * layer + 1) + slot(block_table, pos) * row_floats_;
    }

    // Base of one layer's K / V arrays, for paged attention.
    const float* keys(int layer) const { return layer_base(2 * layer); }
    const float* values(int layer) const { return layer_base(2 * layer + 1); }

private:
    int64_t slot(std::span<const int32_t> block_table, int pos) const;
    // Array `index` (2 * layer: keys, 2 * layer + 1: values).
    float* layer_base(int index) const { return static_cast<float*>(storage_.data()) + index * layer_floats_; }

    int num_layers_, num_blocks_, block_size_tokens_;
    int64_t row_floats_;
    int64_t layer_floats_;  // num_blocks * block_size * row_floats: one K or V array
    ZeroPages storage_;     // [num_layers][K, V][layer_floats_] float32
};

}  // namespace hichat::executor
