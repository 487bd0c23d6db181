// Benchmark of the CPU ops that dominate a forward pass, at Llama-3.2-1B shapes (bf16 weights):
//   1. streaming read bandwidth of the machine (sum over a 1 GiB buffer, 1 and 2 threads);
//   2. linear() at m = 1 (decode GEMV), bf16, int8 (per-row scales) and 4-bit (f16 scales per group of 32)
//      weights, as GB/s of weights read and % of that bandwidth, weights cold
//      (round-robin over copies totalling >= 1 GiB, so they come from DRAM as in a real decode step);
//      plus small batches m = 2..16, and q/k/v fused in one linear_fused() call;
//   3. linear() at m = 128 and 512 (prefill GEMM) as GFLOP/s;
//   4. attention() for decode at 1k/4k context and a 512-token prefill chunk.
// Prints a table and one JSON line per measurement. Not a test; run by hand: ./cpu_ops_bench [--threads N]
// [--simd portable|avx2|avx512|avx512_bf16] [--no-bw] [--no-gemv] [--no-int8] [--no-q4] [--no-gemm] [--no-attention]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/ops.h"
#include "base/dtype.h"
#include "base/q4_layout.h"

namespace hichat::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int64_t kColdBytes = int64_t{1} << 30;  // weights copies per shape, and the bandwidth buffer

typedef uint64_t Lanes __attribute__((vector_size(16)));  // 2 words: one SSE2 register

Lanes load_lanes(const uint64_t* p) {
    Lanes v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Sum of n words (n a multiple of 32), read as 4 interleaved sequential streams (as a GEMV reads
// several weight rows at once: one stream alone leaves too few cache misses in flight), in baseline
// vector instructions (SSE2 on x86-64), which already outrun DRAM. With `ahead`, each stream also
// prefetches the line `ahead` words on (as the GEMV does), which carries the stream across 4 KiB pages
// where the hardware prefetcher stops: on some VMs that is the faster read.
uint64_t sum_words(const uint64_t* p, int64_t n, int64_t ahead) {
    const int64_t quarter = n / 4;
    const uint64_t *s0 = p, *s1 = p + quarter, *s2 = p + 2 * quarter, *s3 = p + 3 * quarter;
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (int64_t i = 0; i + 8 <= quarter; i += 8) {  // one 64-byte line of each stream per step
        if (ahead > 0 && i + ahead < quarter) {
            __builtin_prefetch(s0 + i + ahead);
            __builtin_prefetch(s1 + i + ahead);
            __builtin_prefetch(s2 + i + ahead);
            __builtin_prefetch(s3 + i + ahead);
        }
        a0 += load_lanes(s0 + i) + load_lanes(s0 + i + 2) + load_lanes(s0 + i + 4) + load_lanes(s0 + i + 6);
        a1 += load_lanes(s1 + i) + load_lanes(s1 + i + 2) + load_lanes(s1 + i + 4) + load_lanes(s1 + i + 6);
        a2 += load_lanes(s2 + i) + load_lanes(s2 + i + 2) + load_lanes(s2 + i + 4) + load_lanes(s2 + i + 6);
        a3 += load_lanes(s3 + i) + load_lanes(s3 + i + 2) + load_lanes(s3 + i + 4) + load_lanes(s3 + i + 6);
    }
    Lanes total = (a0 + a1) + (a2 + a3);
    return total[0] + total[1];
}

// Best of 5 passes of a streaming sum over 1 GiB, split over `threads` threads, with and without
// software prefetch; GB/s.
double read_bandwidth_gbps(const std::vector<uint64_t>& buf, int threads) {
    ThreadPool pool(threads);
    const int64_t n = static_cast<int64_t>(buf.size());
    std::vector<uint64_t> sums(static_cast<size_t>(threads));
    double best = 0.0;
    for (int rep = 0; rep < 10; ++rep) {
        const int64_t ahead = rep % 2 == 0 ? 0 : 512;   // 4 KiB ahead
        auto t0 = Clock::now();
        pool.run([&](int t) {
            sums[static_cast<size_t>(t)] = sum_words(buf.data() + n * t / threads, n / threads, ahead);
        });
        best = std::max(best, static_cast<double>(n) * 8 / seconds_since(t0) / 1e9);
    }
    uint64_t total = 0;
    for (uint64_t s : sums) total += s;
    if (total == 42) std::printf(" ");  // keeps the sums alive
    return best;
}

struct Weights {  // copies of one random bf16, int8 or 4-bit weight matrix, to read them cold
    std::vector<std::vector<uint8_t>> copies;
    std::vector<uint8_t> scales;  // int8: f32 per row; 4-bit: f16 per group; shared by the copies
    std::vector<model::WeightTensor> tensors;
    int64_t bytes_per_copy = 0;  // what one call reads: the elements, and the scales
};

Weights make_weights(int64_t n, int64_t k, int64_t min_total_bytes, DType dtype = DType::kBF16) {
    const int64_t elements_bytes = dtype == DType::kQ4 ? n * q4_row_bytes(k) : n * k * (dtype == DType::kI8 ? 1 : 2);
    const int64_t scale_bytes = dtype == DType::kI8 ? 4 * n : dtype == DType::kQ4 ? 2 * n * q4_groups(k) : 0;
    std::vector<uint8_t> base(static_cast<size_t>(elements_bytes));
    uint32_t state = 12345;
    for (int64_t i = 0; i < (dtype == DType::kBF16 ? n * k : elements_bytes); ++i) {
        state = state * 1664525u + 1013904223u;
        if (dtype == DType::kBF16) {
            const uint16_t h = f32_to_bf16((static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.1f);
            std::memcpy(&base[static_cast<size_t>(i) * 2], &h, 2);
        } else {
            base[static_cast<size_t>(i)] = static_cast<uint8_t>(state >> 24);  // int8 codes, or two nibbles
        }
    }
    Weights w;
    w.bytes_per_copy = elements_bytes + scale_bytes;
    const int64_t num_copies = std::max<int64_t>(1, (min_total_bytes + w.bytes_per_copy - 1) / w.bytes_per_copy);
    for (int64_t c = 0; c < num_copies; ++c) w.copies.push_back(base);
    w.scales.resize(static_cast<size_t>(scale_bytes));
    if (dtype == DType::kI8) {
        const float s = 1.0f / 127;
        for (int64_t r = 0; r < n; ++r) std::memcpy(&w.scales[static_cast<size_t>(4 * r)], &s, 4);
    } else if (dtype == DType::kQ4) {
        const uint16_t s = f32_to_f16(1.0f / 64);
        for (int64_t g = 0; g < n * q4_groups(k); ++g) std::memcpy(&w.scales[static_cast<size_t>(2 * g)], &s, 2);
    }
    for (auto& copy : w.copies) {
        model::WeightTensor t{copy.data(), dtype, {n, k}};
        if (dtype == DType::kI8) t.scales = {.data = w.scales.data(), .dtype = DType::kF32, .block_rows = 1, .block_cols = k};
        if (dtype == DType::kQ4) t.scales = {.data = w.scales.data(), .dtype = DType::kF16, .block_rows = 1, .block_cols = kQ4Group};
        w.tensors.push_back(t);
    }
    return w;
}

// Seconds per linear() call: enough calls to read every copy at least twice and take >= 0.3 s.
double time_linear(const Weights& w, int64_t m, ThreadPool& pool) {
    const int64_t n = w.tensors[0].rows(), k = w.tensors[0].cols();
    std::vector<float> x(static_cast<size_t>(m * k), 0.01f), y(static_cast<size_t>(m * n));
    const size_t num_copies = w.tensors.size();
    // Warm-up over every copy (thread scratch, page tables): the first pass over freshly written
    // copies ran 2-4x slower than later ones on the EPYC (2026-12-04), at every SIMD level.
    for (const model::WeightTensor& t : w.tensors) linear(x.data(), m, t, nullptr, y.data(), pool);
    int64_t calls = 0;
    auto t0 = Clock::now();
    while (calls < static_cast<int64_t>(2 * num_copies) || seconds_since(t0) < 0.3) {
        linear(x.data(), m, w.tensors[static_cast<size_t>(calls) % num_copies], nullptr, y.data(), pool);
        ++calls;
    }
    return seconds_since(t0) / static_cast<double>(calls);
}

struct Shape {
    const char* name;
    int64_t n, k;
};

void bench_gemv(double bandwidth_2t, int threads, DType dtype) {
    const char* name = dtype == DType::kI8 ? "int8" : dtype == DType::kQ4 ? "q4" : "bf16";
    const Shape shapes[] = {{"attn q/o 2048x2048", 2048, 2048}, {"attn k/v 512x2048", 512, 2048},
                            {"mlp gate/up 8192x2048", 8192, 2048}, {"mlp down 2048x8192", 2048, 8192},
                            {"lm_head 128256x2048", 128256, 2048}};
    ThreadPool pool(threads);
    std::printf("\n%-24s %4s %10s %9s %8s\n", (std::string("GEMV ") + name + " (n x k)").c_str(), "m", "us/call", "GB/s",
                "% of bw");
    for (const Shape& s : shapes) {
        Weights w = make_weights(s.n, s.k, kColdBytes, dtype);
        std::vector<int64_t> ms = {1};
        if (s.n == 8192) ms = {1, 2, 3, 4, 6, 8, 12, 16};
        if (s.n == 8192 && dtype != DType::kBF16) ms.push_back(128);  // the integer kernels' prefill blocking
        for (int64_t m : ms) {
            double sec = time_linear(w, m, pool);
            double gbps = static_cast<double>(w.bytes_per_copy) / sec / 1e9;
            double pct = 100.0 * gbps / bandwidth_2t;
            std::printf("%-24s %4lld %10.1f %9.2f %7.1f%%\n", s.name, static_cast<long long>(m), sec * 1e6, gbps, pct);
            std::printf("{\"bench\":\"gemv_%s\",\"n\":%lld,\"k\":%lld,\"m\":%lld,\"threads\":%d,\"us\":%.1f,"
                        "\"gbps\":%.2f,\"pct_of_bw\":%.1f}\n",
                        name, static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(m),
                        threads, sec * 1e6, gbps, pct);
        }
    }
}

// q, k and v of one layer (2048 + 512 + 512 rows x 2048) in one linear_fused() call at m = 1, as the
// decode step runs them: compare with the separate q/o and k/v lines above.
void bench_fused_qkv(double bandwidth_2t, int threads) {
    const int64_t k = 2048, rows[3] = {2048, 512, 512}, n = rows[0] + rows[1] + rows[2];
    Weights w = make_weights(n, k, kColdBytes);  // each copy holds q, k, v end to end
    ThreadPool pool(threads);
    std::vector<float> x(static_cast<size_t>(k), 0.01f), y(static_cast<size_t>(n));
    std::vector<std::array<model::WeightTensor, 3>> views;  // [copy][q, k, v]
    for (auto& copy : w.copies) {
        std::array<model::WeightTensor, 3> v;
        for (int64_t o = 0, row0 = 0; o < 3; row0 += rows[o], ++o)
            v[static_cast<size_t>(o)] = {copy.data() + row0 * k * 2, DType::kBF16, {rows[o], k}};
        views.push_back(v);
    }
    auto call = [&](size_t c) {
        const LinearOutput outputs[] = {{&views[c][0], nullptr, y.data()},
                                        {&views[c][1], nullptr, y.data() + rows[0]},
                                        {&views[c][2], nullptr, y.data() + rows[0] + rows[1]}};
        linear_fused(x.data(), 1, outputs, pool);
    };
    for (size_t c = 0; c < views.size(); ++c) call(c);  // warm-up over every copy, as in time_linear
    int64_t calls = 0;
    auto t0 = Clock::now();
    while (calls < static_cast<int64_t>(2 * views.size()) || seconds_since(t0) < 0.3) call(static_cast<size_t>(calls++) % views.size());
    const double sec = seconds_since(t0) / static_cast<double>(calls);
    const double gbps = static_cast<double>(n * k * 2) / sec / 1e9, pct = 100.0 * gbps / bandwidth_2t;
    std::printf("%-24s %4d %10.1f %9.2f %7.1f%%\n", "fused q|k|v 3072x2048", 1, sec * 1e6, gbps, pct);
    std::printf("{\"bench\":\"gemv_bf16_fused_qkv\",\"n\":%lld,\"k\":%lld,\"m\":1,\"threads\":%d,\"us\":%.1f,"
                "\"gbps\":%.2f,\"pct_of_bw\":%.1f}\n",
                static_cast<long long>(n), static_cast<long long>(k), threads, sec * 1e6, gbps, pct);
}

void bench_gemm(int threads) {
    const Shape shapes[] = {{"2048x2048", 2048, 2048}, {"8192x2048", 8192, 2048}, {"2048x8192", 2048, 8192}};
    ThreadPool pool(threads);
    std::printf("\n%-24s %4s %10s %9s\n", "GEMM bf16 (n x k)", "m", "ms/call", "GFLOP/s");
    for (const Shape& s : shapes) {
        Weights w = make_weights(s.n, s.k, 0);
        for (int64_t m : {128, 512}) {
            double sec = time_linear(w, m, pool);
            double gflops = 2.0 * static_cast<double>(m * s.n * s.k) / sec / 1e9;
            std::printf("%-24s %4lld %10.2f %9.1f\n", s.name, static_cast<long long>(m), sec * 1e3, gflops);
            std::printf("{\"bench\":\"gemm_bf16\",\"n\":%lld,\"k\":%lld,\"m\":%lld,\"threads\":%d,\"ms\":%.2f,"
                        "\"gflops\":%.1f}\n",
                        static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(m), threads,
                        sec * 1e3, gflops);
        }
    }
}

// Attention of one sequence at the 1B shapes (32 query heads, 8 KV heads, head_dim 64): decode after
// a long context, and a prefill chunk from position 0.
void bench_attention(int threads) {
    const int num_heads = 32, num_kv_heads = 8, head_dim = 64;
    const int64_t q_stride = int64_t{num_heads} * head_dim, kv_stride = int64_t{num_kv_heads} * head_dim;
    ThreadPool pool(threads);
    std::printf("\n%-24s %6s %6s %10s\n", "attention 32/8 heads x64", "num_q", "ctx", "ms/call");
    const int64_t cases[][2] = {{1, 1024}, {1, 4096}, {512, 512}};  // num_q, context after the call
    for (const auto& c : cases) {
        const int64_t num_q = c[0], num_ctx = c[1];
        std::vector<float> q(static_cast<size_t>(num_q * q_stride), 0.01f), out(q.size());
        std::vector<float> k(static_cast<size_t>(num_ctx * kv_stride), 0.02f), v(k.size(), 0.03f);
        int64_t calls = 0;
        auto t0 = Clock::now();
        while (calls < 3 || seconds_since(t0) < 0.3) {
            attention(q.data(), q_stride, num_q, num_ctx - num_q, k.data(), v.data(), kv_stride, num_heads,
                      num_kv_heads, head_dim, 0.125f, out.data(), pool);
            ++calls;
        }
        const double ms = seconds_since(t0) / static_cast<double>(calls) * 1e3;
        std::printf("%-24s %6lld %6lld %10.3f\n", "", static_cast<long long>(num_q), static_cast<long long>(num_ctx), ms);
        std::printf("{\"bench\":\"attention\",\"num_q\":%lld,\"ctx\":%lld,\"threads\":%d,\"ms\":%.3f}\n",
                    static_cast<long long>(num_q), static_cast<long long>(num_ctx), threads, ms);
    }
}

int run(int argc, char** argv) {
    int threads = 2;
    bool skip_bandwidth = false, skip_gemv = false, skip_gemm = false, skip_attention = false, skip_int8 = false,
         skip_q4 = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
        else if (std::strcmp(argv[i], "--no-bw") == 0) skip_bandwidth = true;
        else if (std::strcmp(argv[i], "--no-gemv") == 0) skip_gemv = true;
        else if (std::strcmp(argv[i], "--no-gemm") == 0) skip_gemm = true;
        else if (std::strcmp(argv[i], "--no-int8") == 0) skip_int8 = true;
        else if (std::strcmp(argv[i], "--no-q4") == 0) skip_q4 = true;
        else if (std::strcmp(argv[i], "--no-attention") == 0) skip_attention = true;
        else if (std::strcmp(argv[i], "--simd") == 0 && i + 1 < argc) {   // a level at or below the detected one
            const std::string name = argv[++i];
            bool known = false;
            for (SimdLevel l : {SimdLevel::kPortable, SimdLevel::kAvx2, SimdLevel::kAvx512, SimdLevel::kAvx512Bf16}) {
                if (simd_level_name(l) != name) continue;
                known = true;
                if (force_simd_level(l) != l) {
                    std::fprintf(stderr, "--simd %s: this CPU's best level is %s\n", name.c_str(),
                                 std::string(simd_level_name(detected_simd_level())).c_str());
                    return 2;
                }
            }
            if (!known) {
                std::fprintf(stderr, "--simd %s: not one of portable, avx2, avx512, avx512_bf16\n", name.c_str());
                return 2;
            }
        }
    }
    std::printf("simd level: %s, threads: %d\n", std::string(simd_level_name(active_simd_level())).c_str(), threads);
    double bw1 = 0.0, bw2 = 0.0;
    if (!skip_bandwidth) {
        std::vector<uint64_t> buf(static_cast<size_t>(kColdBytes / 8));
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = i;
        bw1 = read_bandwidth_gbps(buf, 1);
        bw2 = read_bandwidth_gbps(buf, 2);
        std::printf("read bandwidth: %.2f GB/s (1 thread), %.2f GB/s (2 threads)\n", bw1, bw2);
        std::printf("{\"bench\":\"read_bandwidth\",\"threads\":1,\"gbps\":%.2f}\n", bw1);
        std::printf("{\"bench\":\"read_bandwidth\",\"threads\":2,\"gbps\":%.2f}\n", bw2);
    }
    if (!skip_gemv) {
        bench_gemv(threads >= 2 ? bw2 : bw1, threads, DType::kBF16);
        if (!skip_int8) bench_gemv(threads >= 2 ? bw2 : bw1, threads, DType::kI8);
        if (!skip_q4) bench_gemv(threads >= 2 ? bw2 : bw1, threads, DType::kQ4);
        bench_fused_qkv(threads >= 2 ? bw2 : bw1, threads);
    }
    if (!skip_gemm) bench_gemm(threads);
    if (!skip_attention) bench_attention(threads);
    return 0;
}

}  // namespace
}  // namespace hichat::cpu

int main(int argc, char** argv) { return hichat::cpu::run(argc, argv); }
