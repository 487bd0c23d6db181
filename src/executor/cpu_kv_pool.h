// CpuKvPool: the KV storage of the CPU backend, float32, paged: every layer has a K and a V array of
// [num_blocks, block_size, kv_heads * head_dim]. Which blocks belong to which sequence is decided by
// kv::BlockManager (bookkeeping only); the pool just stores. Owned by CpuRunner; engine thread only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hichat::executor {

class CpuKvPool {
public:
    CpuKvPool(int num_layers, int num_kv_heads, int head_dim, int num_blocks, int block_size_tokens);

    int num_blocks() const { return num_blocks_; }
    int block_size_tokens() const { return block_size_tokens_; }
    int64_t row_floats() const { return row_floats_; }  // kv_heads * head_dim
    static int64_t bytes_per_token(int num_layers, int num_kv_heads, int head_dim) {
        return int64_t{2} * num_layers * num_kv_heads * head_dim * static_cast<int64_t>(sizeof(float));
    }

    // Row of token `pos` of the sequence whose blocks are `block_table`.
    float* key_row(int layer, std::span<const int32_t> block_table, int pos) {
        return keys_[static_cast<size_t>(layer)].data() + slot(block_table, pos) * row_floats_;
    }
    float* value_row(int layer, std::span<const int32_t> block_table, int pos) {
        return values_[static_cast<size_t>(layer)].data() + slot(block_table, pos) * row_floats_;
    }

    // Base of one layer's K / V arrays, for paged attention.
    const float* keys(int layer) const { return keys_[static_cast<size_t>(layer)].data(); }
    const float* values(int layer) const { return values_[static_cast<size_t>(layer)].data(); }

private:
    int64_t slot(std::span<const int32_t> block_table, int pos) const;

    int num_blocks_, block_size_tokens_;
    int64_t row_floats_;
    std::vector<std::vector<float>> keys_, values_;  // [num_layers][num_blocks * block_size * row_floats]
};

}  // namespace hichat::executor
