// attention(): causal grouped-query attention of one sequence, two-pass softmax in fp32.
// Work items are (KV head, query) pairs handed out dynamically, since causal queries differ in cost.
// K/V rows are fp32, or (paged) bf16 / f16 that the row kernels widen in registers; scores, softmax
// and the output accumulate in fp32 either way.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "base/check.h"

namespace hichat::cpu {
namespace {

struct AttentionShape {
    int64_t q_stride, num_q, q_pos0, kv_stride;
    int num_heads, num_kv_heads, head_dim;
    float scale;
    const int32_t* block_table;  // null: K/V rows are contiguous; else paged, block_size rows per block
    int block_size;
};

// Rows [j, j + n) of one head of K or V, with n as large as possible up to `max_rows` while the rows
// stay contiguous (within one block when paged).
template <typename T>
const T* kv_rows(const AttentionShape& s, const T* head, int64_t j, int64_t max_rows, int64_t& n) {
    if (s.block_table == nullptr) {
        n = max_rows;
        return head + j * s.kv_stride;
    }
    const int64_t offset = j % s.block_size;
    n = std::min(max_rows, s.block_size - offset);
    return head + (int64_t{s.block_table[j / s.block_size]} * s.block_size + offset) * s.kv_stride;
}

// Keys per block: a block of K (or V) rows stays in L1/L2 while each query head of the group uses it,
// so the KV cache is read once per group rather than once per query head.
constexpr int64_t kKeysPerBlock = 64;

// Starts loading rows [j0, j0 + num_rows) of one head of K or V (row stride `stride` elements): they
// sit in the cache at a stride the hardware prefetcher does not follow. One prefetch per 64 bytes.
template <typename T>
void prefetch_rows(const T* head, int64_t stride, int64_t j0, int64_t num_rows, int64_t dim) {
    constexpr int64_t kPerLine = 64 / sizeof(T);
    for (int64_t j = j0; j < j0 + num_rows; ++j)
        for (int64_t d = 0; d < dim; d += kPerLine) __builtin_prefetch(head + j * stride + d);
}

// The kernels attention uses, its row products taking K/V elements of type T (fp32, or bf16 / f16 bits).
template <typename T>
struct RowKernels {
    void (*dot_rows)(const float* q, const T* rows, int64_t row_stride, int64_t num_rows, int64_t dim, float* out);
    void (*sum_rows_weighted)(const float* weights, const T* rows, int64_t row_stride, int64_t num_rows, int64_t dim,
                              float* out);
    void (*softmax)(float* x, int64_t n, float scale);
};

RowKernels<float> row_kernels_f32(const KernelTable& k) { return {k.dot_rows, k.sum_rows_weighted, k.softmax}; }
RowKernels<uint16_t> row_kernels_half(const KernelTable& k, DType dtype) {
    CHECK(dtype == DType::kBF16 || dtype == DType::kF16) << "K/V dtype " << dtype_name(dtype);
    return dtype == DType::kBF16 ? RowKernels<uint16_t>{k.dot_rows_bf16, k.sum_rows_weighted_bf16, k.softmax}
                                 : RowKernels<uint16_t>{k.dot_rows_f16, k.sum_rows_weighted_f16, k.softmax};
}

// For the `group` query heads that share one KV head, at one query position:
// out[g, 0:head_dim] = softmax(scale * q[g] . k[0:num_ctx]) . v[0:num_ctx]   for g < group.
// q and out hold the group's heads contiguously ([group, head_dim]); scores is [group, num_ctx].
template <typename T>
void attend_group(const RowKernels<T>& kernels, const AttentionShape& s, int group, const float* q,
                  const T* k_head, const T* v_head, int64_t num_ctx, float* scores, float* out) {
    const int64_t dim = s.head_dim;
    for (int64_t j0 = 0, n = 0; j0 < num_ctx; j0 += n) {
        const T* rows = kv_rows(s, k_head, j0, std::min(kKeysPerBlock, num_ctx - j0), n);
        if (s.block_table == nullptr) {
            const int64_t next = j0 + kKeysPerBlock;
            prefetch_rows(k_head, s.kv_stride, next, std::min(kKeysPerBlock, num_ctx - next), dim);
        }
        for (int g = 0; g < group; ++g) kernels.dot_rows(q + g * dim, rows, s.kv_stride, n, dim, scores + g * num_ctx + j0);
    }
    for (int g = 0; g < group; ++g) kernels.softmax(scores + g * num_ctx, num_ctx, s.scale);
    std::fill(out, out + group * dim, 0.0f);
    for (int64_t j0 = 0, n = 0; j0 < num_ctx; j0 += n) {
        const T* rows = kv_rows(s, v_head, j0, std::min(kKeysPerBlock, num_ctx - j0), n);
        if (s.block_table == nullptr) {
            const int64_t next = j0 + kKeysPerBlock;
            prefetch_rows(v_head, s.kv_stride, next, std::min(kKeysPerBlock, num_ctx - next), dim);
        }
        for (int g = 0; g < group; ++g)
            kernels.sum_rows_weighted(scores + g * num_ctx + j0, rows, s.kv_stride, n, dim, out + g * dim);
    }
}

template <typename T>
void run_attention(const float* q, const T* k, const T* v, const AttentionShape& s, const RowKernels<T>& kernels,
                   float* out, ThreadPool& pool) {
    CHECK(s.num_kv_heads > 0 && s.num_heads % s.num_kv_heads == 0)
        << "num_heads " << s.num_heads << " not a multiple of num_kv_heads " << s.num_kv_heads;
    CHECK_GE(s.q_pos0, 0);
    if (s.num_q <= 0) return;
    const int group = s.num_heads / s.num_kv_heads;
    const int head_dim = s.head_dim;
    // Items are (KV head, query) pairs, KV-head-major so that consecutive items share their K/V rows.
    const int64_t num_items = int64_t{s.num_kv_heads} * s.num_q;
    std::atomic<int64_t> next_item{0};
    pool.run([&](int) {
        thread_local std::vector<float> scores;  // [group, num_ctx] of the current item; grows, never shrinks
        scores.resize(std::max(scores.size(), static_cast<size_t>(group * (s.q_pos0 + s.num_q))));
        for (int64_t item; (item = next_item.fetch_add(1, std::memory_order_relaxed)) < num_items;) {
            const int kv_head = static_cast<int>(item / s.num_q);
            const int64_t i = item % s.num_q;
            const int64_t kv_offset = int64_t{kv_head} * head_dim;
            const int64_t q_offset = int64_t{kv_head} * group * head_dim;
            attend_group(kernels, s, group, q + i * s.q_stride + q_offset, k + kv_offset, v + kv_offset,
                         s.q_pos0 + i + 1, scores.data(), out + i * s.num_heads * head_dim + q_offset);
        }
    });
}

}  // namespace

void attention(const float* q, int64_t q_stride, int64_t num_q, int64_t q_pos0, const float* k,
               const float* v, int64_t kv_stride, int num_heads, int num_kv_heads, int head_dim,
               float scale, float* out, ThreadPool& pool) {
    run_attention(q, k, v,
                  {q_stride, num_q, q_pos0, kv_stride, num_heads, num_kv_heads, head_dim, scale, nullptr, 0},
                  row_kernels_f32(active_kernels()), out, pool);
}

void paged_attention(const float* q, int64_t q_stride, int64_t num_q, int64_t q_pos0, const float* k_pool,
                     const float* v_pool, int64_t kv_stride, const int32_t* block_table, int block_size,
                     int num_heads, int num_kv_heads, int head_dim, float scale, float* out, ThreadPool& pool) {
    paged_attention(q, q_stride, num_q, q_pos0, static_cast<const void*>(k_pool), static_cast<const void*>(v_pool),
                    DType::kF32, kv_stride, block_table, block_size, num_heads, num_kv_heads, head_dim, scale, out,
                    pool);
}

void paged_attention(const float* q, int64_t q_stride, int64_t num_q, int64_t q_pos0, const void* k_pool,
                     const void* v_pool, DType kv_dtype, int64_t kv_stride, const int32_t* block_table,
                     int block_size, int num_heads, int num_kv_heads, int head_dim, float scale, float* out,
                     ThreadPool& pool) {
    CHECK_GT(block_size, 0);
    const AttentionShape shape{q_stride, num_q,     q_pos0, kv_stride, num_heads, num_kv_heads, head_dim,
                               scale,    block_table, block_size};
    if (kv_dtype == DType::kF32) {
        run_attention(q, static_cast<const float*>(k_pool), static_cast<const float*>(v_pool), shape,
                      row_kernels_f32(active_kernels()), out, pool);
    } else {
        run_attention(q, static_cast<const uint16_t*>(k_pool), static_cast<const uint16_t*>(v_pool), shape,
                      row_kernels_half(active_kernels(), kv_dtype), out, pool);
    }
}

}  // namespace hichat::cpu
