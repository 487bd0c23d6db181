// CpuKvPool: the KV storage of the CPU backend, paged: every layer has a K and a V array of
// [num_blocks, block_size, kv_heads * head_dim] elements of one dtype: fp32 (--kv-cache-dtype auto),
// bf16 or f16 (half the memory and half the bytes attention reads). New rows arrive as fp32 and are rounded to nearest even once, when written; attention
// reads the stored elements and widens them to fp32 in registers. Which blocks belong to which
// sequence is decided by kv::BlockManager (bookkeeping only); the pool just stores. The arrays live in
// ZeroPages: a block takes memory once written, so resident memory follows the blocks in use, not the
// pool's size. Owned by CpuRunner; engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/dtype.h"
#include "executor/zero_pages.h"

namespace hichat::executor {

// The CPU KV cache's dtype under --kv-cache-dtype auto (and CpuRunnerConfig's default): fp32. bf16
// would halve the pool's memory and the bytes attention reads per token, but it moves the logits of
// the transformers goldens by 3.3e-3 .. 9e-3 (relative), over their 1e-3 bound (golden_logits_test;
// cpu_kv_dtype_test measures bf16 and f16 against fp32), so the smaller types are asked for by name.
inline constexpr DType kCpuKvAutoDtype = DType::kF32;

class CpuKvPool {
public:
    // dtype: kF32, kBF16 or kF16 (CHECKed).
    CpuKvPool(int num_layers, int num_kv_heads, int head_dim, int num_blocks, int block_size_tokens, DType dtype);

    int num_blocks() const { return num_blocks_; }
    int block_size_tokens() const { return block_size_tokens_; }
    DType dtype() const { return dtype_; }
    int64_t row_elements() const { return row_elements_; }  // kv_heads * head_dim
    // K and V of every layer for one block, in the stored dtype: what save_block() writes and
    // load_block() reads, byte for byte.
    int64_t block_bytes() const { return 2 * num_layers_ * block_size_tokens_ * row_elements_ * element_bytes_; }
    void save_block(int32_t block, std::byte* out) const;
    void load_block(int32_t block, const std::byte* in);
    static int64_t bytes_per_token(int num_layers, int num_kv_heads, int head_dim, DType dtype) {
        return int64_t{2} * num_layers * num_kv_heads * head_dim * dtype_size_bytes(dtype);
    }

    // Stores token `pos`'s K and V rows (row_elements() floats each) of the sequence whose blocks are
    // `block_table`, rounded to nearest even into the pool's dtype.
    void write(int layer, std::span<const int32_t> block_table, int pos, const float* key, const float* value);

    // Row of token `pos` as stored (row_elements() elements of dtype()).
    void* key_row(int layer, std::span<const int32_t> block_table, int pos) {
        return element(2 * layer, slot(block_table, pos) * row_elements_);
    }
    void* value_row(int layer, std::span<const int32_t> block_table, int pos) {
        return element(2 * layer + 1, slot(block_table, pos) * row_elements_);
    }

    // Base of one layer's K / V arrays (elements of dtype()), for paged attention.
    const void* keys(int layer) const { return element(2 * layer, 0); }
    const void* values(int layer) const { return element(2 * layer + 1, 0); }

private:
    int64_t slot(std::span<const int32_t> block_table, int pos) const;
    // Element `index` of array `array` (2 * layer: keys, 2 * layer + 1: values).
    std::byte* element(int array, int64_t index) const {
        return static_cast<std::byte*>(storage_.data()) + (array * layer_elements_ + index) * element_bytes_;
    }

    int num_layers_, num_blocks_, block_size_tokens_;
    DType dtype_;
    int64_t element_bytes_;
    int64_t row_elements_;
    int64_t layer_elements_;  // num_blocks * block_size * row_elements: one K or V array
    ZeroPages storage_;       // [num_layers][K, V][layer_elements_] of dtype_
};

}  // namespace hichat::executor
