#include "executor/cpu_kv_pool.h"

#include <cstring>

#include "base/check.h"

namespace hichat::executor {
namespace {

// dst[0:n] = src[0:n] in `dtype`, rounded to nearest even (bf16 and f16, as torch rounds).
void store_row(const float* src, int64_t n, DType dtype, std::byte* dst) {
    if (dtype == DType::kF32) {
        std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
        return;
    }
    auto* out = reinterpret_cast<uint16_t*>(dst);
    if (dtype == DType::kBF16) {
        for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(src[i]);
    } else {
        for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(src[i]);
    }
}

}  // namespace

CpuKvPool::CpuKvPool(int num_layers, int num_kv_heads, int head_dim, int num_blocks, int block_size_tokens,
                     DType dtype)
    : num_layers_(num_layers),
      num_blocks_(num_blocks),
      block_size_tokens_(block_size_tokens),
      dtype_(dtype),
      element_bytes_(dtype_size_bytes(dtype)),
      row_elements_(static_cast<int64_t>(num_kv_heads) * head_dim),
      layer_elements_(static_cast<int64_t>(num_blocks) * block_size_tokens * row_elements_),
      storage_(static_cast<size_t>(2 * num_layers * layer_elements_ * element_bytes_)) {
    CHECK_GT(block_size_tokens, 0);
    CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16)
        << "CPU KV cache dtype " << dtype_name(dtype);
}

// Block b of array a (2 * layer + k/v) is one run of block_size * row_elements elements.
void CpuKvPool::save_block(int32_t block, std::byte* out) const {
    CHECK(block >= 0 && block < num_blocks_) << "block " << block;
    const int64_t run = block_size_tokens_ * row_elements_;
    const auto run_bytes = static_cast<size_t>(run * element_bytes_);
    for (int a = 0; a < 2 * num_layers_; ++a) std::memcpy(out + a * run_bytes, element(a, block * run), run_bytes);
}

void CpuKvPool::load_block(int32_t block, const std::byte* in) {
    CHECK(block >= 0 && block < num_blocks_) << "block " << block;
    const int64_t run = block_size_tokens_ * row_elements_;
    const auto run_bytes = static_cast<size_t>(run * element_bytes_);
    for (int a = 0; a < 2 * num_layers_; ++a) std::memcpy(element(a, block * run), in + a * run_bytes, run_bytes);
}

void CpuKvPool::write(int layer, std::span<const int32_t> block_table, int pos, const float* key,
                      const float* value) {
    const int64_t offset = slot(block_table, pos) * row_elements_;
    store_row(key, row_elements_, dtype_, element(2 * layer, offset));
    store_row(value, row_elements_, dtype_, element(2 * layer + 1, offset));
}

int64_t CpuKvPool::slot(std::span<const int32_t> block_table, int pos) const {
    const auto index = static_cast<size_t>(pos / block_size_tokens_);
    CHECK_LT(index, block_table.size()) << "position " << pos << " beyond the sequence's blocks";
    const int32_t block = block_table[index];
    CHECK(block >= 0 && block < num_blocks_) << "block " << block;
    return static_cast<int64_t>(block) * block_size_tokens_ + pos % block_size_tokens_;
}

}  // namespace hichat::executor
