// linear() and linear_fused(): y = x w^T (+ bias). Splits the output columns (weight rows, of all the
// fused outputs end to end) over the pool's threads and runs the active SIMD level's kernel on each
// range: a streaming GEMV for small m (decode), a packed, register-blocked GEMM for large m (prefill).
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "backend/cpu/kernel_table.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/weight_reader.h"
#include "base/check.h"
#include "base/q4_layout.h"

namespace hichat::cpu {
namespace {

// Weights whose products are integer sums over quantized activations (linear_i8, linear_q4).
bool is_integer(DType t) { return t == DType::kI8 || t == DType::kQ4; }

// The calling thread's kernel scratch, at least `num_floats` long: grows when a larger m needs it, and
// is otherwise reused for the thread's life.
float* thread_scratch(int64_t num_floats) {
    struct AlignedFree {
        void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
    };
    thread_local std::unique_ptr<float[], AlignedFree> scratch;
    thread_local int64_t capacity = 0;
    if (capacity < num_floats) {
        scratch.reset(static_cast<float*>(
            ::operator new[](sizeof(float) * static_cast<size_t>(num_floats), std::align_val_t{64})));
        capacity = num_floats;
    }
    return scratch.get();
}

// x quantized for int8 or (`group_sums`: with its group sums) 4-bit weights into the calling thread's
// reused buffers (grown when a larger m * k needs it): rows split over the pool's threads when there
// are many. With an `order` (act-order weights), column c of the result is x[:, order[c]].
Int8Rows quantize_x(const float* x, int64_t m, int64_t k, bool group_sums, const int32_t* order, ThreadPool& pool) {
    struct AlignedFree {
        void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
    };
    thread_local std::unique_ptr<uint8_t[], AlignedFree> codes;
    thread_local int64_t capacity = 0;
    thread_local std::vector<float> scales, sums;
    const int64_t stride = group_sums ? q4_padded(k) : int8_rows_stride(k);  // group sums: for 4-bit weights
    const int64_t sums_stride = group_sums ? stride / kQ4Group : 0;
    if (static_cast<int64_t>(sums.size()) < m * sums_stride) sums.resize(static_cast<size_t>(m * sums_stride));
    if (capacity < m * stride) {
        codes.reset(static_cast<uint8_t*>(::operator new[](static_cast<size_t>(m * stride), std::align_val_t{64})));
        capacity = m * stride;
    }
    if (static_cast<int64_t>(scales.size()) < m) scales.resize(static_cast<size_t>(m));
    // The calling thread's buffers, named here: in the pool's threads `codes` would be their own.
    uint8_t* const out_codes = codes.get();
    float* const out_scales = scales.data();
    float* const out_sums = group_sums ? sums.data() : nullptr;
    auto rows = [=](int64_t begin, int64_t end) {
        thread_local std::vector<float> gathered;   // this thread's row of x in `order`
        if (order != nullptr && static_cast<int64_t>(gathered.size()) < k) gathered.resize(static_cast<size_t>(k));
        for (int64_t i = begin; i < end; ++i) {
            const float* row = x + i * k;
            if (order != nullptr) {
                for (int64_t c = 0; c < k; ++c) gathered[c] = row[order[c]];
                row = gathered.data();
            }
            if (out_sums != nullptr) {
                quantize_row_q4x(row, k, out_codes + i * stride, &out_scales[i], out_sums + i * sums_stride);
            } else {
                quantize_row_int8(row, k, out_codes + i * stride, &out_scales[i]);
            }
        }
    };
    constexpr int64_t kRowsPerThreadMin = 8;
    const int num_threads = pool.num_threads();
    if (m < kRowsPerThreadMin * num_threads) {
        rows(0, m);
    } else {
        pool.run([&](int t) { rows(m * t / num_threads, m * (t + 1) / num_threads); });
    }
    return Int8Rows{out_codes, out_scales, stride, out_sums};
}

void add_bias(const WeightTensor& bias, const LinearProblem& p, int64_t n_begin, int64_t n_end) {
    with_weight_reader(bias.data, bias.dtype, [&](auto read) {
        for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = n_begin; j < n_end; ++j) p.y[i * p.n + j] += read(j);
    });
}

// One output of linear_fused(), checked, with the units of rows that precede it.
struct Part {
    LinearProblem p;
    const WeightTensor* bias = nullptr;  // null when absent
    int64_t first_unit = 0, end_unit = 0;   // its units [first_unit, end_unit) of the fused range
};

// Checks the outputs and sets them up; outputs with k == 0 are filled here (zeros + bias).
// The parts live in the calling thread's reused vector (no allocation per call once it has grown).
std::vector<Part>& make_parts(const float* x, int64_t m, std::span<const LinearOutput> outputs) {
    thread_local std::vector<Part> parts;
    parts.clear();
    for (const LinearOutput& out : outputs) {
        const WeightTensor& w = *out.w;
        CHECK_EQ(w.shape.size(), 2u) << "linear weight must be 2-D";
        CHECK(w.present());
        CHECK(w.dtype != DType::kF8E4M3) << "FP8 weights reach the CPU kernels dequantized (model/fp8_dequant.h)";
        CHECK_EQ(w.cols(), outputs[0].w->cols()) << "fused linear weights must share k";
        CHECK(w.dtype == outputs[0].w->dtype || !(is_integer(w.dtype) || is_integer(outputs[0].w->dtype)))
            << "fused linear weights: all int8, all 4-bit or neither";
        if (w.dtype == DType::kI8) {
            CHECK(w.scales.dtype == DType::kF32 && w.scales.block_rows == 1 && w.scales.block_cols == w.cols())
                << "int8 weights need one f32 scale per row";
            CHECK_LE(w.cols(), kInt8MaxK) << "int8 linear: k";
        }
        if (w.dtype == DType::kQ4) {
            CHECK(w.scales.dtype == DType::kF16 && w.scales.block_rows == 1 && w.scales.block_cols == kQ4Group)
                << "4-bit weights need f16 scales per group of 32 (base/q4_layout.h)";
        }
        CHECK(w.scales.input_order == outputs[0].w->scales.input_order)
            << "fused linear weights share one input order (model/int_weights.h)";
        const bool has_bias = out.bias != nullptr && out.bias->present();
        if (has_bias) {
            CHECK_EQ(out.bias->num_elements(), w.rows()) << "linear bias size";
        }
        const auto* w_scale = w.dtype == DType::kI8 ? static_cast<const float*>(w.scales.data) : nullptr;
        const auto* q4_scales = w.dtype == DType::kQ4 ? static_cast<const uint16_t*>(w.scales.data) : nullptr;
        const uint8_t* q4_zeros = w.dtype == DType::kQ4 ? w.scales.zeros : nullptr;
        Part part{LinearProblem{x, w.data, w.dtype, out.y, m, w.rows(), w.cols(), w_scale, q4_scales, q4_zeros},
                  has_bias ? out.bias : nullptr};
        if (m > 0 && part.p.k == 0) {
            std::fill(out.y, out.y + m * part.p.n, 0.0f);
            if (has_bias) add_bias(*out.bias, part.p, 0, part.p.n);
        }
        parts.push_back(part);
    }
    return parts;
}

}  // namespace

void linear(const float* x, int64_t m, const WeightTensor& w, const WeightTensor* bias, float* y,
            ThreadPool& pool) {
    const LinearOutput output{&w, bias, y};
    linear_fused(x, m, std::span<const LinearOutput>(&output, 1), pool);
}

void linear_fused(const float* x, int64_t m, std::span<const LinearOutput> outputs, ThreadPool& pool) {
    CHECK(!outputs.empty());
    std::vector<Part>& parts = make_parts(x, m, outputs);
    if (m <= 0 || parts[0].p.k == 0) return;  // k == 0: make_parts has written y (all share k)
    const KernelTable& kernels = active_kernels();
    // int8 and 4-bit weights: x quantized once for all the outputs; linear_i8 / linear_q4 stream each
    // weight once for all m.
    const bool int8 = is_integer(parts[0].p.w_dtype);
    const bool q4 = parts[0].p.w_dtype == DType::kQ4;
    const Int8Rows xq = int8 ? quantize_x(x, m, parts[0].p.k, q4, outputs[0].w->scales.input_order, pool) : Int8Rows{};
    const bool use_gemm = !int8 && m > kernels.max_gemv_rows;  // GEMV streams each weight once for all m rows
    const int64_t unit = use_gemm ? kernels.gemm_panel_cols : 16;  // rows split at multiples of this
    int64_t num_units = 0;
    for (Part& part : parts) {
        part.first_unit = num_units;
        num_units += (part.p.n + unit - 1) / unit;
        part.end_unit = num_units;
    }
    if (num_units == 0) return;
    const int num_threads = pool.num_threads();
    // The first weight row of unit u (u < num_units).
    auto unit_rows = [&](int64_t u) -> const void* {
        const Part* part = &parts[0];
        for (const Part& q : parts)
            if (q.first_unit <= u) part = &q;
        const int64_t row_bytes = part->p.k * dtype_size_bytes(part->p.w_dtype);
        return static_cast<const char*>(part->p.w) + (u - part->first_unit) * unit * row_bytes;
    };
    // One contiguous range of units; `next_unit_begin` is the first unit this thread takes after it
    // (or num_units): the GEMV starts bringing its rows in while it finishes the range.
    auto run_units = [&](int64_t unit_begin, int64_t unit_end, int64_t next_unit_begin) {
        for (const Part& part : parts) {  // the units, where they fall in each output
            const int64_t n_begin = std::min(part.p.n, (std::max(unit_begin, part.first_unit) - part.first_unit) * unit);
            const int64_t n_end = std::min(part.p.n, (std::max(unit_end, part.first_unit) - part.first_unit) * unit);
            if (n_begin >= n_end) continue;
            if (q4) {
                kernels.linear_q4(part.p, xq, n_begin, n_end);
            } else if (int8) {
                kernels.linear_i8(part.p, xq, n_begin, n_end);
            } else if (use_gemm) {
                kernels.gemm(part.p, n_begin, n_end, thread_scratch(gemm_scratch_floats(m)));
            } else {
                const int64_t then = part.end_unit < unit_end ? part.end_unit : next_unit_begin;
                kernels.gemv(part.p, n_begin, n_end, then < num_units ? unit_rows(then) : nullptr,
                             thread_scratch(gemv_scratch_floats(m, part.p.k)));
            }
            if (part.bias != nullptr) add_bias(*part.bias, part.p, n_begin, n_end);
        }
    };
    // GEMM (prefill): one range per thread (each range repacks x). GEMV (decode): threads take
    // contiguous chunks of units from a shared counter, about kChunksPerThread each, so a thread that
    // runs slow (its core busy elsewhere on a shared host) does not hold up the others at the end of the
    // region. A row is always computed whole by one thread: results do not depend on the split.
    if (use_gemm) {
        pool.run([&](int t) {
            run_units(num_units * t / num_threads, num_units * (t + 1) / num_threads, num_units);
        });
        return;
    }
    constexpr int64_t kChunksPerThread = 8;
    const int64_t chunk = std::max<int64_t>(1, num_units / (num_threads * kChunksPerThread));
    std::atomic<int64_t> next_unit{0};
    // Each thread claims its next chunk as it starts one, so that the chunk's end can prefetch the
    // next one's first rows (a chunk would otherwise start cold, as every 4 KiB page does): decode
    // 0.6-2.6% faster in 8 of 8 alternating runs on the 2-core benchmark machine (2026-11-30).
    pool.run([&](int) {
        int64_t begin = next_unit.fetch_add(chunk, std::memory_order_relaxed);
        while (begin < num_units) {
            const int64_t after = next_unit.fetch_add(chunk, std::memory_order_relaxed);
            run_units(begin, std::min(begin + chunk, num_units), std::min(after, num_units));
            begin = after;
        }
    });
}

}  // namespace hichat::cpu
