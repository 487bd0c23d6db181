// cublaslt_scale_probe: which cuBLASLt FP8 (E4M3) GEMMs this GPU and cuBLAS version have for the 8B's
// shapes, and how fast: the unit-scale product in bf16 (Gemm::run_fp8_unit, the fallback, with
// scale_fp8_product after it), and per-token x per-channel scale vectors applied by cuBLASLt itself
// (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, Gemm::run_fp8_scaled) into bf16, and into fp32 with the
// residual added (beta = 1, C = D: o_proj and down_proj).
// Prints one line per (m, n, k, variant): algorithm found, fast accumulation, us per GEMM, and for the
// scaled variants the largest relative difference against the unit product scaled on the host.
// Not run by ctest (it needs a GPU and prints timings).
//
//   cublaslt_scale_probe [m ...]     (default m = 256 2048)
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                                          \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));   \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)
#define CHECK_LT(x)                                                                            \
    do {                                                                                       \
        cublasStatus_t s_ = (x);                                                               \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
            std::fprintf(stderr, "%s:%d: cublasLt status %d\n", __FILE__, __LINE__, int(s_));  \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

enum class Variant { kUnitBf16, kVecBf16, kVecF32Accumulate };
const char* name_of(Variant v) {
    return v == Variant::kUnitBf16 ? "unit->bf16" : v == Variant::kVecBf16 ? "vec->bf16" : "vec->f32+=";
}

struct Buffers {
    void *a, *w, *d_bf16, *d_f32, *a_scale, *w_scale, *workspace;
    size_t workspace_bytes;
};

struct Result {
    bool found = false;
    int fast_accum = -1;
    double us = 0;
};

Result run(cublasLtHandle_t lt, const Buffers& b, Variant v, int m, int n, int k) {
    Result r;
    const bool vec = v != Variant::kUnitBf16;
    const cudaDataType_t d_type = v == Variant::kVecF32Accumulate ? CUDA_R_32F : CUDA_R_16BF;
    void* d = v == Variant::kVecF32Accumulate ? b.d_f32 : b.d_bf16;
    for (int8_t fast : {int8_t{1}, int8_t{0}}) {
        cublasLtMatmulDesc_t op;
        CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
        CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
        CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
        if (vec) {
            const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
            CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)));
            CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)));
            CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &b.w_scale,
                                                    sizeof(b.w_scale)));
            CHECK_LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b.a_scale,
                                                    sizeof(b.a_scale)));
        }
        cublasLtMatrixLayout_t wl, al, dl;
        CHECK_LT(cublasLtMatrixLayoutCreate(&wl, CUDA_R_8F_E4M3, k, n, k));
        CHECK_LT(cublasLtMatrixLayoutCreate(&al, CUDA_R_8F_E4M3, k, m, k));
        CHECK_LT(cublasLtMatrixLayoutCreate(&dl, d_type, n, m, n));
        cublasLtMatmulPreference_t pref;
        CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
        CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &b.workspace_bytes, sizeof(b.workspace_bytes)));
        cublasLtMatmulHeuristicResult_t res{};
        int count = 0;
        const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, wl, al, dl, dl, pref, 1, &res, &count);
        if (st == CUBLAS_STATUS_SUCCESS && count > 0) {
            const float alpha = 1.0f, beta = v == Variant::kVecF32Accumulate ? 1.0f : 0.0f;
            auto once = [&] {
                CHECK_LT(cublasLtMatmul(lt, op, &alpha, b.w, wl, b.a, al, &beta, d, dl, d, dl, &res.algo, b.workspace,
                                        b.workspace_bytes, nullptr));
            };
            if (v == Variant::kVecF32Accumulate) CHECK_CUDA(cudaMemset(d, 0, size_t{4} * m * n));
            once();   // the checked result: D = product (+ zeros)
            CHECK_CUDA(cudaDeviceSynchronize());
            cudaEvent_t e0, e1;
            CHECK_CUDA(cudaEventCreate(&e0));
            CHECK_CUDA(cudaEventCreate(&e1));
            for (int i = 0; i < 3; ++i) once();
            constexpr int kReps = 20;
            CHECK_CUDA(cudaEventRecord(e0));
            for (int i = 0; i < kReps; ++i) once();
            CHECK_CUDA(cudaEventRecord(e1));
            CHECK_CUDA(cudaEventSynchronize(e1));
            float ms = 0;
            CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            r = {true, fast, 1000.0 * ms / kReps};
            if (v == Variant::kVecF32Accumulate) {   // back to one product for the check
                CHECK_CUDA(cudaMemset(d, 0, size_t{4} * m * n));
                once();
                CHECK_CUDA(cudaDeviceSynchronize());
            }
        }
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(wl);
        cublasLtMatrixLayoutDestroy(al);
        cublasLtMatrixLayoutDestroy(dl);
        cublasLtMatmulDescDestroy(op);
        if (r.found) break;
    }
    return r;
}

float bf16_to_float(uint16_t h) {
    uint32_t bits = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> ms;
    for (int i = 1; i < argc; ++i) ms.push_back(std::atoi(argv[i]));
    if (ms.empty()) ms = {256, 2048};
    const int shapes[4][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};   // q|k|v, o, gate|up, down
    int version = 0;
    cublasLtHandle_t lt;
    CHECK_LT(cublasLtCreate(&lt));
    version = static_cast<int>(cublasLtGetVersion());
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, cublasLt %d\n", prop.name, version);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> code(0, 0x76);   // finite E4M3 magnitudes below 448 (0x7e)
    std::uniform_real_distribution<float> scale(0.5f, 2.0f);
    for (int m : ms) {
        for (const auto& s : shapes) {
            const int n = s[0], k = s[1];
            std::vector<uint8_t> ha(size_t(m) * k), hw(size_t(n) * k);
            for (auto& x : ha) x = uint8_t(code(rng) | (rng() & 1 ? 0x80 : 0));
            for (auto& x : hw) x = uint8_t(code(rng) | (rng() & 1 ? 0x80 : 0));
            std::vector<float> has(m), hws(n);
            for (auto& x : has) x = scale(rng);
            for (auto& x : hws) x = scale(rng);
            Buffers b{};
            b.workspace_bytes = size_t{32} << 20;
            CHECK_CUDA(cudaMalloc(&b.a, ha.size()));
            CHECK_CUDA(cudaMalloc(&b.w, hw.size()));
            CHECK_CUDA(cudaMalloc(&b.d_bf16, size_t{2} * m * n));
            CHECK_CUDA(cudaMalloc(&b.d_f32, size_t{4} * m * n));
            CHECK_CUDA(cudaMalloc(&b.a_scale, 4 * has.size()));
            CHECK_CUDA(cudaMalloc(&b.w_scale, 4 * hws.size()));
            CHECK_CUDA(cudaMalloc(&b.workspace, b.workspace_bytes));
            CHECK_CUDA(cudaMemcpy(b.a, ha.data(), ha.size(), cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(b.w, hw.data(), hw.size(), cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(b.a_scale, has.data(), 4 * has.size(), cudaMemcpyHostToDevice));
            CHECK_CUDA(cudaMemcpy(b.w_scale, hws.data(), 4 * hws.size(), cudaMemcpyHostToDevice));
            std::vector<uint16_t> unit(size_t(m) * n);
            for (Variant v : {Variant::kUnitBf16, Variant::kVecBf16, Variant::kVecF32Accumulate}) {
                const Result r = run(lt, b, v, m, n, k);
                double worst = 0;
                if (r.found && v == Variant::kUnitBf16) {
                    CHECK_CUDA(cudaMemcpy(unit.data(), b.d_bf16, 2 * unit.size(), cudaMemcpyDeviceToHost));
                } else if (r.found) {
                    std::vector<float> got(size_t(m) * n);
                    if (v == Variant::kVecBf16) {
                        std::vector<uint16_t> h(got.size());
                        CHECK_CUDA(cudaMemcpy(h.data(), b.d_bf16, 2 * h.size(), cudaMemcpyDeviceToHost));
                        for (size_t i = 0; i < h.size(); ++i) got[i] = bf16_to_float(h[i]);
                    } else {
                        CHECK_CUDA(cudaMemcpy(got.data(), b.d_f32, 4 * got.size(), cudaMemcpyDeviceToHost));
                    }
                    double max_ref = 0;
                    for (size_t i = 0; i < got.size(); ++i) {
                        const double ref = double(bf16_to_float(unit[i])) * has[i / n] * hws[i % n];
                        max_ref = std::max(max_ref, std::fabs(ref));
                        worst = std::max(worst, std::fabs(got[i] - ref));
                    }
                    worst /= max_ref > 0 ? max_ref : 1;
                }
                std::printf("m=%-5d n=%-6d k=%-6d %-11s %s", m, n, k, name_of(v), r.found ? "found" : "NO ALGORITHM");
                if (r.found) {
                    std::printf("  fast_accum=%d  %9.2f us  %7.1f TFLOP/s", r.fast_accum, r.us,
                                2.0 * m * n * k / (r.us * 1e-6) / 1e12);
                    if (v != Variant::kUnitBf16) std::printf("  max |diff| / max |ref| %.2e", worst);
                }
                std::printf("\n");
            }
            for (void* p : {b.a, b.w, b.d_bf16, b.d_f32, b.a_scale, b.w_scale, b.workspace}) cudaFree(p);
        }
    }
    cublasLtDestroy(lt);
    return 0;
}
