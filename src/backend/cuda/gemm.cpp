// Gemm over cuBLASLt. Row-major D[m, n] = A[m, k] W[n, k]^T is, in cuBLAS's column-major terms,
// D^T[n, m] = W^T^T A^T: the weight goes in as cuBLAS's A with op T, the activations as B with op N.
// Descriptors and the heuristic's algorithm are built once per (m, n, k, out, accumulate, alignment).
#include "backend/cuda/gemm.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include "backend/cuda/device_buffer.h"
#include "backend/cuda/ops.h"
#include "base/check.h"

namespace hichat::cuda {
namespace {

#define CUBLASLT_CHECK(call)                                                              \
    do {                                                                                  \
        const cublasStatus_t hichat_st_ = (call);                                         \
        CHECK(hichat_st_ == CUBLAS_STATUS_SUCCESS) << #call << ": " << cublasLtGetStatusString(hichat_st_); \
    } while (0)

struct PlanKey {
    int m, n, k;
    GemmOut out;
    bool accumulate;
    int alignment_bytes;   // smallest alignment of the three pointers, capped at 16
    bool fp8 = false;      // E4M3 inputs: unit scales, or
    bool scaled = false;   // a scale per row of each (OUTER_VEC_32F), the vectors' pointers set per call
    bool operator<(const PlanKey& o) const {
        return std::tie(m, n, k, out, accumulate, alignment_bytes, fp8, scaled) <
               std::tie(o.m, o.n, o.k, o.out, o.accumulate, o.alignment_bytes, o.fp8, o.scaled);
    }
};

// One shape's descriptors and algorithm; owns the cuBLASLt descriptors.
struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t w_layout = nullptr, a_layout = nullptr, d_layout = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool has_algo = false;

    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() {
        if (d_layout != nullptr) cublasLtMatrixLayoutDestroy(d_layout);
        if (a_layout != nullptr) cublasLtMatrixLayoutDestroy(a_layout);
        if (w_layout != nullptr) cublasLtMatrixLayoutDestroy(w_layout);
        if (op != nullptr) cublasLtMatmulDescDestroy(op);
    }
};

int pointer_alignment(const void* p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    int a = 16;
    while (a > 1 && (v % a) != 0) a /= 2;
    return a;
}

}  // namespace

struct Gemm::Impl {
    cublasLtHandle_t handle = nullptr;
    DeviceBuffer workspace;
    std::map<PlanKey, Plan> plans;

    Plan& plan_for(const PlanKey& key);
    // D (+)= A W^T with the plan's descriptors and algorithm (a scaled plan's vectors: w_scale, a_scale).
    cudaError_t matmul(const Plan& p, const void* a, const void* w, void* d, bool accumulate, cudaStream_t stream,
                       const float* a_scale = nullptr, const float* w_scale = nullptr) {
        if (a_scale != nullptr) {
            CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                                          sizeof(w_scale)));
            CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale,
                                                          sizeof(a_scale)));
        }
        const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
        const cublasStatus_t st = cublasLtMatmul(handle, p.op, &alpha, w, p.w_layout, a, p.a_layout, &beta, d,
                                                 p.d_layout, d, p.d_layout, &p.algo, workspace.data(),
                                                 workspace.num_bytes(), stream);
        if (st != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
        return cudaGetLastError();
    }
};

Plan& Gemm::Impl::plan_for(const PlanKey& key) {
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    Plan& p = plans[key];
    const cudaDataType_t d_type = key.out == GemmOut::kF32 ? CUDA_R_32F : CUDA_R_16BF;
    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_w = CUBLAS_OP_T, trans_a = CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_w, sizeof(trans_w)));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_a, sizeof(trans_a)));
    const cudaDataType_t in_type = key.fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    if (key.scaled) {   // cuBLAS's A is the weight: its vector scales D^T's rows (w_scale), B's its columns (a_scale)
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)));
        CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)));
        // The heuristic finds no algorithm for vector scales whose pointers are unset (cuBLASLt 13.1):
        // they point at the workspace until matmul() sets the call's.
        const void* placeholder = workspace.data();
        for (auto attr : {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER})
            CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, attr, &placeholder, sizeof(placeholder)));
    }
    // Column-major views: W^T is [k, n] (ld k), A^T is [k, m] (ld k), D^T is [n, m] (ld n).
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.w_layout, in_type, key.k, key.n, key.k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.a_layout, in_type, key.k, key.m, key.k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.d_layout, d_type, key.n, key.m, key.n));

    cublasLtMatmulPreference_t pref = nullptr;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws_bytes = workspace.num_bytes();
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                        sizeof(ws_bytes)));
    const uint32_t align = static_cast<uint32_t>(key.alignment_bytes);
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
    // FP8: fast accumulation where cuBLASLt has an algorithm with it, else the exact one.
    const int8_t fast_accum_tries[2] = {1, 0};
    for (int attempt = 0; attempt < (key.fp8 ? 2 : 1); ++attempt) {
        const int8_t fast_accum = fast_accum_tries[attempt];
        if (key.fp8) {
            CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                                          sizeof(fast_accum)));
        }
        cublasLtMatmulHeuristicResult_t result{};
        int num_results = 0;
        const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.w_layout, p.a_layout, p.d_layout,
                                                                 p.d_layout, pref, 1, &result, &num_results);
        if (st == CUBLAS_STATUS_SUCCESS && num_results > 0) {
            p.algo = result.algo;
            p.has_algo = true;
            break;
        }
    }
    cublasLtMatmulPreferenceDestroy(pref);
    return p;
}

Gemm::Gemm(size_t workspace_bytes, bool use_gemv) : impl_(std::make_unique<Impl>()), use_gemv_(use_gemv) {
    CUBLASLT_CHECK(cublasLtCreate(&impl_->handle));
    impl_->workspace = DeviceBuffer(workspace_bytes);
}

Gemm::~Gemm() {
    impl_->plans.clear();
    if (impl_->handle != nullptr) cublasLtDestroy(impl_->handle);
}

cudaError_t Gemm::run(const __nv_bfloat16* a, const __nv_bfloat16* w, void* d, GemmOut out_type, int m, int n, int k,
                      bool accumulate, cudaStream_t stream) {
    if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
    if (m == 0 || n == 0) return cudaSuccess;
    if (accumulate && out_type != GemmOut::kF32) return cudaErrorInvalidValue;
    if (use_gemv_ && gemv_applies(a, w, d, m, k)) return gemv(a, w, d, out_type == GemmOut::kF32, m, n, k, accumulate, stream);
    const int alignment = std::min({pointer_alignment(a), pointer_alignment(w), pointer_alignment(d)});
    const PlanKey key{m, n, k, out_type, accumulate, alignment};
    Plan& p = impl_->plan_for(key);
    if (!p.has_algo) return cudaErrorNotSupported;
    return impl_->matmul(p, a, w, d, accumulate, stream);
}

bool Gemm::fp8_supported(int m, int n, int k) {
    if (m <= 0 || n <= 0 || k <= 0 || k % 16 != 0 || n % 16 != 0) return false;
    PlanKey key{m, n, k, GemmOut::kBf16, false, 16};
    key.fp8 = true;
    return impl_->plan_for(key).has_algo;
}

cudaError_t Gemm::run_fp8_unit(const uint8_t* a, const uint8_t* w, bf16* d, int m, int n, int k, cudaStream_t stream) {
    if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
    if (m == 0 || n == 0) return cudaSuccess;
    const int alignment = std::min({pointer_alignment(a), pointer_alignment(w), pointer_alignment(d)});
    if (alignment < 16 || k % 16 != 0 || n % 16 != 0) return cudaErrorNotSupported;
    PlanKey key{m, n, k, GemmOut::kBf16, false, 16};
    key.fp8 = true;
    Plan& p = impl_->plan_for(key);
    if (!p.has_algo) return cudaErrorNotSupported;
    return impl_->matmul(p, a, w, d, false, stream);
}

cudaError_t Gemm::run_fp8_scaled(const uint8_t* a, const float* a_scale, const uint8_t* w, const float* w_scale,
                                 void* d, GemmOut out_type, int m, int n, int k, bool accumulate, cudaStream_t stream) {
    if (m < 0 || n < 0 || k < 0 || a_scale == nullptr || w_scale == nullptr) return cudaErrorInvalidValue;
    if (m == 0 || n == 0) return cudaSuccess;
    if (accumulate && out_type != GemmOut::kF32) return cudaErrorInvalidValue;
    const int alignment = std::min({pointer_alignment(a), pointer_alignment(w), pointer_alignment(d),
                                    pointer_alignment(a_scale), pointer_alignment(w_scale)});
    if (alignment < 16 || k % 16 != 0 || n % 16 != 0) return cudaErrorNotSupported;
    PlanKey key{m, n, k, out_type, accumulate, 16};
    key.fp8 = key.scaled = true;
    Plan& p = impl_->plan_for(key);
    if (!p.has_algo) return cudaErrorNotSupported;
    return impl_->matmul(p, a, w, d, accumulate, stream, a_scale, w_scale);
}

cudaError_t Gemm::run_fp8(const uint8_t* a, const float* a_scale, const uint8_t* w, const float* w_scale, void* d,
                          GemmOut out_type, int m, int n, int k, bool accumulate, bf16* scratch, int scratch_rows,
                          cudaStream_t stream) {
    if (m < 0 || n < 0 || k < 0 || a_scale == nullptr || w_scale == nullptr || scratch == nullptr || scratch_rows <= 0) {
        return cudaErrorInvalidValue;
    }
    if (m == 0 || n == 0) return cudaSuccess;
    if (accumulate && out_type != GemmOut::kF32) return cudaErrorInvalidValue;
    if (pointer_alignment(d) < 16) return cudaErrorNotSupported;
    const cudaError_t scaled = run_fp8_scaled(a, a_scale, w, w_scale, d, out_type, m, n, k, accumulate, stream);
    if (scaled != cudaErrorNotSupported) return scaled;
    const size_t out_bytes = out_type == GemmOut::kF32 ? 4 : 2;
    for (int r0 = 0; r0 < m; r0 += scratch_rows) {
        const int rows = std::min(scratch_rows, m - r0);
        cudaError_t st = run_fp8_unit(a + static_cast<size_t>(r0) * k, w, scratch, rows, n, k, stream);
        if (st != cudaSuccess) return st;
        st = scale_fp8_product(scratch, a_scale + r0, w_scale, static_cast<char*>(d) + static_cast<size_t>(r0) * n * out_bytes,
                               out_type == GemmOut::kF32, accumulate, rows, n, stream);
        if (st != cudaSuccess) return st;
    }
    return cudaSuccess;
}

}  // namespace hichat::cuda
