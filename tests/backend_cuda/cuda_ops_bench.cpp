// cuda_ops_bench: times each CUDA op at Llama-3-8B-like sizes with CUDA events (3 warm-ups, median of
// 20) and prints achieved bandwidth (bytes each input read once + each output written once) or FLOP
// rate. Inputs are random; not a test (no reference), run by hand on a GPU machine.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/ops.h"
#include "base/check.h"

namespace hichat::cuda {
namespace {

// Fills a buffer with random bf16 in [-1, 1) (or fp32 when f32): one host block of up to 4M random
// values, copied over the buffer at a random shift per copy (generating GBs on the host is too slow).
DeviceBuffer random_buffer(size_t num_elems, bool f32, std::mt19937& rng) {
    const size_t elem_bytes = f32 ? 4 : 2;
    DeviceBuffer buf(num_elems * elem_bytes);
    const size_t block = std::min<size_t>(num_elems, size_t{1} << 22);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> h32(f32 ? 2 * block : 0);
    std::vector<bf16> h16(f32 ? 0 : 2 * block);
    for (size_t i = 0; i < 2 * block; ++i) {
        if (f32) h32[i] = dist(rng); else h16[i] = __float2bfloat16(dist(rng));
    }
    const char* src = f32 ? reinterpret_cast<const char*>(h32.data()) : reinterpret_cast<const char*>(h16.data());
    for (size_t done = 0; done < num_elems; done += block) {
        const size_t n = std::min(block, num_elems - done), shift = rng() % block;
        CUDA_CHECK(cudaMemcpy(buf.as<char>() + done * elem_bytes, src + shift * elem_bytes, n * elem_bytes,
                              cudaMemcpyHostToDevice));
    }
    return buf;
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& h) {
    DeviceBuffer buf(h.size() * sizeof(T));
    CUDA_CHECK(cudaMemcpy(buf.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return buf;
}

// Median milliseconds of one call of fn.
double time_ms(const std::function<cudaError_t()>& fn) {
    for (int i = 0; i < 3; ++i) CUDA_CHECK(fn());
    CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<float> ms(20);
    for (float& t : ms) {
        CUDA_CHECK(cudaEventRecord(start));
        CUDA_CHECK(fn());
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

void report_bytes(const char* name, double ms, double bytes) {
    std::printf("%-44s %9.4f ms %8.1f GB/s\n", name, ms, bytes / (ms * 1e-3) / 1e9);
}
void report_flops(const char* name, double ms, double flops) {
    std::printf("%-44s %9.4f ms %8.1f TFLOP/s\n", name, ms, flops / (ms * 1e-3) / 1e12);
}

void bench_gemm(std::mt19937& rng) {
    Gemm gemm, cublas_only(32 << 20, false);
    struct Shape { int n, k; };
    // Llama-3-8B's q|k|v, o, down and lm_head; Llama-3.2-1B's q|k|v, o, down and lm_head.
    for (const Shape s : {Shape{6144, 4096}, Shape{4096, 4096}, Shape{4096, 14336}, Shape{128256, 4096},
                          Shape{3072, 2048}, Shape{2048, 2048}, Shape{2048, 8192}, Shape{128256, 2048}}) {
        for (int m : {1}) {
            DeviceBuffer a = random_buffer(size_t{1} * m * s.k, false, rng);
            DeviceBuffer w = random_buffer(size_t{1} * s.n * s.k, false, rng);
            DeviceBuffer d = random_buffer(size_t{1} * m * s.n, true, rng);
            for (Gemm* g : {&gemm, &cublas_only}) {
                const double ms = time_ms([&] {
                    return g->run(a.as<bf16>(), w.as<bf16>(), d.data(), GemmOut::kF32, m, s.n, s.k, g == &gemm, nullptr);
                });
                char name[64];
                std::snprintf(name, sizeof(name), "%s f32 m=%d n=%d k=%d", g == &gemm ? "gemv" : "cublasLt", m, s.n, s.k);
                report_bytes(name, ms, 2.0 * s.n * s.k);
            }
        }
    }
    for (const Shape s : {Shape{14336, 4096}, Shape{8192, 2048}}) {  // gate|up + SwiGLU: 8B, 1B
        DeviceBuffer a = random_buffer(size_t{1} * s.k, false, rng);
        DeviceBuffer w = random_buffer(size_t{2} * s.n * s.k, false, rng);
        DeviceBuffer d = random_buffer(size_t{1} * s.n, false, rng);
        const double ms = time_ms([&] { return gemv_silu_mul(a.as<bf16>(), w.as<bf16>(), d.as<bf16>(), s.n, s.k, nullptr); });
        char name[64];
        std::snprintf(name, sizeof(name), "gemv_silu_mul n=2x%d k=%d", s.n, s.k);
        report_bytes(name, ms, 4.0 * s.n * s.k);
    }
    for (int m : {16, 64, 4096}) {
        const int n = 4096 * 3, k = 4096;
        DeviceBuffer a = random_buffer(size_t{1} * m * k, false, rng), w = random_buffer(size_t{1} * n * k, false, rng);
        DeviceBuffer d = random_buffer(size_t{1} * m * n, true, rng);
        const double ms = time_ms([&] {
            return gemm.run(a.as<bf16>(), w.as<bf16>(), d.data(), GemmOut::kBf16, m, n, k, false, nullptr);
        });
        char name[64];
        std::snprintf(name, sizeof(name), "gemm bf16 m=%d n=%d k=%d", m, n, k);
        if (m >= 1024)
            report_flops(name, ms, 2.0 * m * n * k);
        else
            report_bytes(name, ms, 2.0 * n * k + 2.0 * m * (n + k));
    }
}

void bench_row_ops(std::mt19937& rng) {
    const int rows = 4096, dim = 4096, inter = 14336;
    DeviceBuffer x = random_buffer(size_t{1} * rows * dim, true, rng), w = random_buffer(dim, false, rng);
    DeviceBuffer y = random_buffer(size_t{1} * rows * dim, false, rng);
    report_bytes("rms_norm 4096x4096", time_ms([&] {
                     return rms_norm(x.as<float>(), rows, dim, w.as<bf16>(), 1e-5f, y.as<bf16>(), nullptr);
                 }),
                 6.0 * rows * dim);
    DeviceBuffer gu = random_buffer(size_t{2} * rows * inter, false, rng), act = random_buffer(size_t{1} * rows * inter, false, rng);
    report_bytes("silu_mul 4096x14336", time_ms([&] {
                     return silu_mul(gu.as<bf16>(), rows, inter, act.as<bf16>(), nullptr);
                 }),
                 6.0 * rows * inter);
    const int vocab = 128256, num_logit_rows = 256;
    DeviceBuffer logits = random_buffer(size_t{1} * num_logit_rows * vocab, true, rng);
    DeviceBuffer ids(num_logit_rows * 4);
    report_bytes("argmax 256x128256", time_ms([&] {
                     return argmax_rows(logits.as<float>(), num_logit_rows, vocab, ids.as<int32_t>(), nullptr);
                 }),
                 4.0 * num_logit_rows * vocab);
}

// Llama-3-8B attention shapes: 32 query heads, 8 kv heads, head_dim 128, block size 16.
struct AttentionSetup {
    int num_seqs, num_new, kv_len;
    DeviceBuffer q, k, v, out, cu, lens, tables, workspace;
    AttentionMetadata meta;
    bool fp8 = false;
    DeviceBuffer k8, v8;   // fp8: the E4M3 cache (every code 0x34 = 0.75; the kernels' time does not depend on it)
};

AttentionSetup make_attention(int num_seqs, int num_new, int kv_len, std::mt19937& rng) {
    const int h = 32, kvh = 8, d = 128, bs = 16;
    AttentionSetup s{num_seqs, num_new, kv_len, {}, {}, {}, {}, {}, {}, {}, {}, {}, false, {}, {}};
    const int blocks_per_seq = (kv_len + bs - 1) / bs, num_blocks = num_seqs * blocks_per_seq;
    std::vector<int32_t> tables(num_blocks);
    std::iota(tables.begin(), tables.end(), 0);
    std::shuffle(tables.begin(), tables.end(), rng);
    std::vector<int32_t> cu(num_seqs + 1), lens(num_seqs, kv_len);
    for (int i = 0; i <= num_seqs; ++i) cu[i] = i * num_new;
    s.q = random_buffer(size_t{1} * num_seqs * num_new * h * d, false, rng);
    s.k = random_buffer(size_t{1} * num_blocks * bs * kvh * d, false, rng);
    s.v = random_buffer(size_t{1} * num_blocks * bs * kvh * d, false, rng);
    s.out = DeviceBuffer(size_t{2} * num_seqs * num_new * h * d);
    s.cu = upload(cu);
    s.lens = upload(lens);
    s.tables = upload(tables);
    s.workspace = DeviceBuffer(std::max<size_t>(16, attention_workspace_bytes(num_seqs * num_new, h, d, kv_len)));
    s.meta = AttentionMetadata{s.cu.as<int32_t>(), s.lens.as<int32_t>(), s.tables.as<int32_t>(), num_seqs,
                               num_seqs * num_new, blocks_per_seq, num_new, kv_len};
    const size_t cache_bytes = size_t{1} * num_blocks * bs * kvh * d;
    s.k8 = DeviceBuffer(cache_bytes);
    s.v8 = DeviceBuffer(cache_bytes);
    CUDA_CHECK(cudaMemset(s.k8.data(), 0x34, cache_bytes));
    CUDA_CHECK(cudaMemset(s.v8.data(), 0x34, cache_bytes));
    return s;
}

cudaError_t launch_attention(AttentionSetup& s, cudaStream_t stream) {
    if (s.fp8) {
        return paged_attention_fp8(s.q.as<bf16>(), s.k8.as<uint8_t>(), s.v8.as<uint8_t>(), s.meta, 32, 8, 128, 16,
                                   0.08838834764f, 0.5f, 0.25f, s.out.as<bf16>(), s.workspace.data(),
                                   s.workspace.num_bytes(), stream);
    }
    return paged_attention(s.q.as<bf16>(), s.k.as<bf16>(), s.v.as<bf16>(), s.meta, 32, 8, 128, 16, 0.08838834764f,
                           s.out.as<bf16>(), s.workspace.data(), s.workspace.num_bytes(), stream);
}

double run_attention(AttentionSetup& s) {
    return time_ms([&] { return launch_attention(s, nullptr); });
}

// The same call captured once in a CUDA graph and replayed (how the runner issues decode steps): no
// host launch cost in the figure. Returns -1 (and says why) when the capture fails.
double run_attention_graph(AttentionSetup& s) {
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (err == cudaSuccess) {
        const cudaError_t launched = launch_attention(s, stream);
        err = cudaStreamEndCapture(stream, &graph);
        if (launched != cudaSuccess) err = launched;
    }
    if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
    double ms = -1.0;
    if (err == cudaSuccess) {
        ms = time_ms([&] { return cudaGraphLaunch(exec, nullptr); });
    } else {
        std::printf("decode attention graph capture failed: %s\n", cudaGetErrorString(err));
        cudaGetLastError();
    }
    if (exec != nullptr) CUDA_CHECK(cudaGraphExecDestroy(exec));
    if (graph != nullptr) CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaStreamDestroy(stream));
    return ms;
}

void bench_attention(std::mt19937& rng) {
    for (auto [seqs, len] : {std::pair{64, 4096}, std::pair{256, 1024}, std::pair{256, 2000}, std::pair{8, 8192},
                             std::pair{1, 32768}}) {
        AttentionSetup s = make_attention(seqs, 1, len, rng);
        for (bool fp8 : {false, true}) {   // bytes: of the cache as stored
            s.fp8 = fp8;
            char name[80];
            const double kv_bytes = (fp8 ? 1.0 : 2.0) * 2 * seqs * static_cast<double>(len) * 8 * 128;
            std::snprintf(name, sizeof(name), "decode attention %d seqs x %d ctx%s", seqs, len, fp8 ? " fp8" : "");
            report_bytes(name, run_attention(s), kv_bytes);
            std::snprintf(name, sizeof(name), "decode attention %d seqs x %d ctx%s (graph)", seqs, len, fp8 ? " fp8" : "");
            const double graph_ms = run_attention_graph(s);
            if (graph_ms > 0.0) report_bytes(name, graph_ms, kv_bytes);
        }
    }
    // Prefill (tensor cores): fresh prompts and chunks of new tokens over a cached prefix. FLOPs count the
    // causal half only: 4 * head_dim * heads per (query, visible key) pair.
    struct PrefillShape { int seqs, num_new, kv_len; };
    for (auto [seqs, num_new, len] : {PrefillShape{1, 2048, 2048}, PrefillShape{1, 4096, 4096}, PrefillShape{8, 1024, 1024},
                                      PrefillShape{1, 16384, 16384}, PrefillShape{4, 512, 8192},
                                      PrefillShape{16, 128, 2048}}) {
        AttentionSetup s = make_attention(seqs, num_new, len, rng);
        for (bool fp8 : {false, true}) {
            s.fp8 = fp8;
            char name[80];
            std::snprintf(name, sizeof(name), "prefill attention %d seqs x %d new / %d ctx%s", seqs, num_new, len,
                          fp8 ? " fp8" : "");
            const double pairs = static_cast<double>(num_new) * (len - num_new) + num_new * (num_new + 1.0) / 2;
            report_flops(name, run_attention(s), 4.0 * seqs * pairs * 128 * 32);
        }
    }
}

void bench_rope(std::mt19937& rng) {
    const int t = 4096, h = 32, kvh = 8, d = 128, width = (h + 2 * kvh) * d;
    DeviceBuffer qkv = random_buffer(size_t{1} * t * width, false, rng), q = random_buffer(size_t{1} * t * h * d, false, rng);
    DeviceBuffer kc = random_buffer(size_t{1} * t * kvh * d, false, rng), vc = random_buffer(size_t{1} * t * kvh * d, false, rng);
    std::vector<int32_t> pos(t);
    std::iota(pos.begin(), pos.end(), 0);
    std::vector<float> inv_freq(d / 2);
    for (int j = 0; j < d / 2; ++j) inv_freq[j] = std::pow(5e5f, -2.0f * j / d);
    DeviceBuffer d_pos = upload(pos), d_slots = upload(pos), d_freq = upload(inv_freq);
    QkvRopeParams p{qkv.as<bf16>(), nullptr, nullptr, nullptr, 1e-6f, d_pos.as<int32_t>(), d_freq.as<float>(),
                    d_slots.as<int32_t>(), t, h, kvh, d, q.as<bf16>(), kc.as<bf16>(), vc.as<bf16>()};
    report_bytes("qkv_rope_kv_write 4096 tokens 32/8x128", time_ms([&] { return qkv_rope_kv_write(p, nullptr); }),
                 4.0 * t * width);
}

// cuBLASLt's heuristic choice against the fastest of its first kMaxAlgos candidates, per shape of an
// 8B step (bf16 out, fp32 accumulation, as Gemm runs them): what autotuning would gain in isolation
// (in the engine it did not: docs/cuda-notes.md).
void bench_gemm_algos(std::mt19937& rng) {
    constexpr int kMaxAlgos = 16;
    cublasLtHandle_t handle;
    CHECK(cublasLtCreate(&handle) == CUBLAS_STATUS_SUCCESS);
    DeviceBuffer workspace(32 << 20);
    struct Shape { const char* name; int n, k, per_step; };
    const Shape shapes[] = {{"qkv", 6144, 4096, 32}, {"o", 4096, 4096, 32}, {"gate_up", 28672, 4096, 32},
                            {"down", 4096, 14336, 32}, {"lm_head", 128256, 4096, 1}};
    for (int m : {64, 128, 256, 8000}) {
        double step_first = 0, step_best = 0;
        for (const Shape& s : shapes) {
            if (m > 256 && s.per_step == 1) continue;  // prefill runs the lm_head on last rows only
            DeviceBuffer a = random_buffer(size_t{1} * m * s.k, false, rng);
            DeviceBuffer w = random_buffer(size_t{1} * s.n * s.k, false, rng);
            DeviceBuffer d = random_buffer(size_t{1} * m * s.n, false, rng);
            cublasLtMatmulDesc_t op;
            cublasLtMatrixLayout_t wl, al, dl;
            CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
            const cublasOperation_t tw = CUBLAS_OP_T, ta = CUBLAS_OP_N;
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tw, sizeof(tw));
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &ta, sizeof(ta));
            cublasLtMatrixLayoutCreate(&wl, CUDA_R_16BF, s.k, s.n, s.k);
            cublasLtMatrixLayoutCreate(&al, CUDA_R_16BF, s.k, m, s.k);
            cublasLtMatrixLayoutCreate(&dl, CUDA_R_16BF, s.n, m, s.n);
            cublasLtMatmulPreference_t pref;
            cublasLtMatmulPreferenceCreate(&pref);
            const size_t ws = workspace.num_bytes();
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
            cublasLtMatmulHeuristicResult_t results[kMaxAlgos];
            int num = 0;
            cublasLtMatmulAlgoGetHeuristic(handle, op, wl, al, dl, dl, pref, kMaxAlgos, results, &num);
            double first = 0, best = 1e30;
            int best_i = -1;
            for (int i = 0; i < num; ++i) {
                const float alpha = 1, beta = 0;
                const double ms = time_ms([&] {
                    return cublasLtMatmul(handle, op, &alpha, w.data(), wl, a.data(), al, &beta, d.data(), dl, d.data(), dl,
                                          &results[i].algo, workspace.data(), ws, nullptr) == CUBLAS_STATUS_SUCCESS
                               ? cudaSuccess
                               : cudaErrorUnknown;
                });
                if (i == 0) first = ms;
                if (ms < best) best = ms, best_i = i;
            }
            std::printf("gemm_algos m=%-5d %-8s n=%-6d k=%-5d heuristic %.4f ms, best of %2d %.4f ms (#%d) %+.1f%%\n", m,
                        s.name, s.n, s.k, first, num, best, best_i, 100.0 * (best - first) / first);
            step_first += first * s.per_step;
            step_best += best * s.per_step;
            cublasLtMatmulPreferenceDestroy(pref);
            cublasLtMatrixLayoutDestroy(dl);
            cublasLtMatrixLayoutDestroy(al);
            cublasLtMatrixLayoutDestroy(wl);
            cublasLtMatmulDescDestroy(op);
        }
        std::printf("gemm_algos m=%-5d 8B step's GEMMs: heuristic %.3f ms, best %.3f ms\n", m, step_first, step_best);
    }
    cublasLtDestroy(handle);
}

// sample_rows at a decode batch: reads the logits once per pass (max, 3 + 3 radix passes, the pick).
void bench_sampling(std::mt19937& rng) {
    const int vocab = 128256, rows = 256;
    DeviceBuffer logits = random_buffer(size_t{1} * rows * vocab, true, rng);
    DeviceBuffer params = upload(std::vector<SampleRowParams>(rows, SampleRowParams{1.0f, 50, 0.9f, 0.0f, 0.5f}));
    DeviceBuffer ids(rows * 4);
    report_bytes("sample 256x128256 top_k 50 top_p 0.9", time_ms([&] {
                     return sample_rows(logits.as<float>(), rows, vocab, params.as<SampleRowParams>(),
                                        ids.as<int32_t>(), nullptr, 0, nullptr);
                 }),
                 4.0 * rows * vocab);
}

// FP8 against bf16 on the 8B's shapes (q|k|v, o, gate|up, down) as the engine runs them: microseconds
// per product at each m. m <= 8: fp8_gemv (fp8_gemv_silu_mul for gate|up) vs Gemm::run (the bf16 gemv
// at m = 1, cuBLASLt above). m > 8, FP8: quantize_fp8_rows and the unit-scale product (qkv: its scales
// go to the RoPE kernel, not timed here), then for o and down scale_fp8_product adding to fp32, and for
// gate|up silu_mul_fp8 (down's input quantization; down itself then starts from codes); bf16: Gemm::run,
// with silu_mul after gate|up. o and down accumulate into fp32 on both sides.
void bench_fp8(std::mt19937& rng) {
    Gemm gemm;
    struct Shape { int n, k; const char* name; };
    const Shape shapes[] = {{6144, 4096, "qkv"}, {4096, 4096, "o"}, {28672, 4096, "gate_up"}, {4096, 14336, "down"}};
    std::vector<uint8_t> codes(size_t{1} << 22);
    for (uint8_t& c : codes) do c = static_cast<uint8_t>(rng() & 0xffu); while ((c & 0x7fu) >= 0x78u);  // |v| < 256
    for (int m : {1, 2, 4, 8, 16, 64, 128, 256, 1024, 2048, 4096}) {
        double bf16_sum = 0.0, fp8_sum = 0.0;
        for (const Shape s : shapes) {
            if (m > 8 && !gemm.fp8_supported(m, s.n, s.k)) {
                std::printf("fp8 m=%-5d %-8s no cuBLASLt FP8 algorithm\n", m, s.name);
                continue;
            }
            const bool gate_up = s.n == 28672, residual = s.n == 4096;   // o and down add to the fp32 residual
            DeviceBuffer a = random_buffer(size_t{1} * m * s.k, false, rng), wb = random_buffer(size_t{1} * s.n * s.k, false, rng);
            DeviceBuffer w8(size_t{1} * s.n * s.k);
            for (size_t done = 0; done < w8.num_bytes(); done += codes.size()) {
                CUDA_CHECK(cudaMemcpy(w8.as<char>() + done, codes.data(), std::min(codes.size(), w8.num_bytes() - done),
                                      cudaMemcpyHostToDevice));
            }
            DeviceBuffer w_scale = upload(std::vector<float>(s.n, 0.01f)), d(size_t{1} * m * s.n * 4);
            DeviceBuffer a8(size_t{1} * m * s.k), a_scale(size_t{4} * m), product(size_t{1} * m * s.n * 2);
            DeviceBuffer act(size_t{1} * m * s.n);
            const GemmOut out = residual ? GemmOut::kF32 : GemmOut::kBf16;
            const double bf16_ms = time_ms([&] {
                const cudaError_t e = gemm.run(a.as<bf16>(), wb.as<bf16>(), d.data(), out, m, s.n, s.k, residual, nullptr);
                if (e != cudaSuccess || !gate_up || m <= 8) return e;
                return silu_mul(d.as<bf16>(), m, s.n / 2, act.as<bf16>(), nullptr);
            });
            const double fp8_ms = time_ms([&] {
                if (m <= 8 && gate_up)   // the fused SwiGLU instance the engine runs
                    return fp8_gemv_silu_mul(a.as<bf16>(), w8.as<uint8_t>(), w_scale.as<float>(), d.as<bf16>(), m,
                                             s.n / 2, s.k, nullptr);
                if (m <= 8) return fp8_gemv(a.as<bf16>(), w8.as<uint8_t>(), w_scale.as<float>(), d.data(), residual, m,
                                            s.n, s.k, residual, nullptr);
                cudaError_t e = quantize_fp8_rows(a.as<bf16>(), m, s.k, a8.as<uint8_t>(), a_scale.as<float>(), nullptr);
                if (e != cudaSuccess) return e;
                if (residual) {
                    return gemm.run_fp8(a8.as<uint8_t>(), a_scale.as<float>(), w8.as<uint8_t>(), w_scale.as<float>(),
                                        d.data(), GemmOut::kF32, m, s.n, s.k, true, product.as<bf16>(), m, nullptr);
                }
                e = gemm.run_fp8_unit(a8.as<uint8_t>(), w8.as<uint8_t>(), product.as<bf16>(), m, s.n, s.k, nullptr);
                if (e != cudaSuccess || !gate_up) return e;
                return silu_mul_fp8(product.as<bf16>(), a_scale.as<float>(), w_scale.as<float>(), m, s.n / 2,
                                    act.as<uint8_t>(), a_scale.as<float>(), nullptr);
            });
            bf16_sum += bf16_ms;
            fp8_sum += fp8_ms;
            std::printf("fp8 m=%-5d %-8s n=%-6d k=%-6d bf16 %8.1f us  fp8 %8.1f us  (%.2fx; fp8 weights %.0f GB/s)\n", m,
                        s.name, s.n, s.k, bf16_ms * 1e3, fp8_ms * 1e3, bf16_ms / fp8_ms,
                        double{1} * s.n * s.k / (fp8_ms * 1e-3) / 1e9);
        }
        std::printf("fp8 m=%-5d per layer: bf16 %.1f us, fp8 %.1f us (%.2fx)\n", m, bf16_sum * 1e3, fp8_sum * 1e3,
                    bf16_sum / fp8_sum);
    }
}

// The FP8 path's row kernels around the GEMMs at a 2048-token 8B prefill (per layer: rms_norm_fp8 and
// scale_fp8_product twice, quantize_fp8_rows, silu_mul_fp8, qkv_rope_kv with scales into an FP8 cache),
// each alone (no PDL overlap), with the bytes it must move.
void bench_fp8_rows(std::mt19937& rng) {
    const int t = 2048, dim = 4096, inter = 14336, h = 32, kvh = 8, hd = 128, width = (h + 2 * kvh) * hd;
    DeviceBuffer x = random_buffer(size_t{1} * t * dim, true, rng), w = random_buffer(dim, false, rng);
    DeviceBuffer a = random_buffer(size_t{1} * t * dim, false, rng), q8(size_t{1} * t * inter), scale(size_t{4} * t);
    DeviceBuffer a_scale = upload(std::vector<float>(t, 0.02f)), w_scale = upload(std::vector<float>(2 * inter, 0.01f));
    report_bytes("rms_norm_fp8 2048x4096", time_ms([&] {
                     return rms_norm_fp8(x.as<float>(), t, dim, w.as<bf16>(), 1e-5f, q8.as<uint8_t>(), scale.as<float>(),
                                         nullptr);
                 }),
                 5.0 * t * dim);
    report_bytes("quantize_fp8_rows 2048x4096", time_ms([&] {
                     return quantize_fp8_rows(a.as<bf16>(), t, dim, q8.as<uint8_t>(), scale.as<float>(), nullptr);
                 }),
                 3.0 * t * dim);
    report_bytes("scale_fp8_product f32+= 2048x4096", time_ms([&] {
                     return scale_fp8_product(a.as<bf16>(), a_scale.as<float>(), w_scale.as<float>(), x.data(), true,
                                              true, t, dim, nullptr);
                 }),
                 10.0 * t * dim);
    DeviceBuffer gu = random_buffer(size_t{2} * t * inter, false, rng);
    report_bytes("silu_mul_fp8 2048x14336 scaled", time_ms([&] {
                     return silu_mul_fp8(gu.as<bf16>(), a_scale.as<float>(), w_scale.as<float>(), t, inter,
                                         q8.as<uint8_t>(), scale.as<float>(), nullptr);
                 }),
                 5.0 * t * inter);
    report_bytes("silu_mul_fp8 2048x14336 (product scaled by cuBLASLt)", time_ms([&] {
                     return silu_mul_fp8(gu.as<bf16>(), nullptr, nullptr, t, inter, q8.as<uint8_t>(),
                                         scale.as<float>(), nullptr);
                 }),
                 5.0 * t * inter);
    DeviceBuffer qkv = random_buffer(size_t{1} * t * width, false, rng), q(size_t{2} * t * h * hd);
    DeviceBuffer kc(size_t{1} * t * kvh * hd), vc(size_t{1} * t * kvh * hd);
    DeviceBuffer col_scale = upload(std::vector<float>(width, 0.01f));
    std::vector<int32_t> pos(t);
    std::iota(pos.begin(), pos.end(), 0);
    std::vector<float> inv_freq(hd / 2);
    for (int j = 0; j < hd / 2; ++j) inv_freq[j] = std::pow(5e5f, -2.0f * j / hd);
    DeviceBuffer d_pos = upload(pos), d_slots = upload(pos), d_freq = upload(inv_freq);
    QkvRopeParams p{qkv.as<bf16>(), nullptr, nullptr, nullptr, 1e-6f, d_pos.as<int32_t>(), d_freq.as<float>(),
                    d_slots.as<int32_t>(), t, h, kvh, hd, q.as<bf16>(), kc.data(), vc.data(), true, 0.5f, 0.25f,
                    a_scale.as<float>(), col_scale.as<float>()};
    report_bytes("qkv_rope_kv scaled, fp8 KV, 2048 tokens", time_ms([&] { return qkv_rope_kv_write(p, nullptr); }),
                 2.0 * t * width + 2.0 * t * h * hd + 2.0 * t * kvh * hd);
}

// fp8_gemv at each split count on the 8B's shapes, m = 1 and 8: microseconds (the chosen count first).
void bench_fp8_splits(std::mt19937& rng) {
    struct Shape { int n, k; const char* name; };
    const Shape shapes[] = {{6144, 4096, "qkv"}, {4096, 4096, "o"}, {28672, 4096, "gate_up"}, {4096, 14336, "down"}};
    for (const Shape s : shapes) {
        DeviceBuffer w8 = random_buffer(size_t{1} * s.n * s.k / 2, false, rng);   // any bytes: bf16 bits as codes
        DeviceBuffer a = random_buffer(size_t{8} * s.k, false, rng), d(size_t{8} * s.n * 2);
        DeviceBuffer w_scale = upload(std::vector<float>(s.n, 0.01f));
        for (int m : {1, 8}) {
            std::printf("fp8_splits m=%d %-8s", m, s.name);
            for (int splits : {0, 1, 2, 4, 8}) {
                const double ms = time_ms([&] {
                    return fp8_gemv(a.as<bf16>(), w8.as<uint8_t>(), w_scale.as<float>(), d.data(), false, m, s.n, s.k,
                                    false, nullptr, splits);
                });
                std::printf("  %s%d %6.1f us", splits == 0 ? "chosen" : "s", splits, ms * 1e3);
            }
            std::printf("\n");
        }
    }
}

}  // namespace
}  // namespace hichat::cuda

// cuda_ops_bench [GROUP...]: the groups named (row, rope, attention, gemm, sampling, fp8, fp8_rows, fp8_splits,
// gemm_algos), or all but fp8_splits and gemm_algos.
int main(int argc, char** argv) {
    using namespace hichat::cuda;
    if (!cuda_device_available()) {
        std::printf("SKIPPED: no CUDA device\n");
        return 0;
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::mt19937 rng(1234);
    const auto wanted = [&](const char* group) {
        if (argc < 2) return true;
        for (int i = 1; i < argc; ++i)
            if (std::strcmp(argv[i], group) == 0) return true;
        return false;
    };
    if (wanted("row")) bench_row_ops(rng);
    if (wanted("rope")) bench_rope(rng);
    if (wanted("attention")) bench_attention(rng);
    if (wanted("gemm")) bench_gemm(rng);
    if (wanted("sampling")) bench_sampling(rng);
    if (wanted("fp8")) bench_fp8(rng);
    if (wanted("fp8_rows")) bench_fp8_rows(rng);
    if (argc >= 2 && wanted("fp8_splits")) bench_fp8_splits(rng);
    if (argc >= 2 && wanted("gemm_algos")) bench_gemm_algos(rng);
    return 0;
}
