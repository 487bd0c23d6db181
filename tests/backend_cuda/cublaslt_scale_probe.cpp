// Not run by ctest: which cuBLASLt descriptors get an FP8 algorithm with per-row scale vectors
// (OUTER_VEC_32F on A and B: per-channel x per-token), and how fast each is. Gemm's probe found none
// for the 8B's shapes (cuBLASLt 13.1, H100 and H200) while torch's rowwise _scaled_mm reaches one on
// sm90; this varies what that probe left fixed: output type, scale pointers set before the heuristic
// or not, fast accumulation, alignment preferences, and which operand is the weight. One line per
// descriptor: the heuristic's status, its algorithm count and the fastest one's microseconds.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace {

struct Descriptor {
    int m, n, k;              // D[m, n] = A[m, k] W[n, k]^T, row-major
    cudaDataType_t out;       // D's type
    bool scale_vectors;       // OUTER_VEC_32F on both operands (else unit scalar scales)
    bool pointers_first;      // scale pointers set before the heuristic is asked
    bool fast_accumulation;
    bool alignment_prefs;     // 16-byte minimum alignment preferences
    bool weight_as_b;         // the weight as cuBLAS's B (Gemm passes it as A)
};

struct Probe {
    cublasLtHandle_t handle = nullptr;
    void* workspace = nullptr;
    void* scales = nullptr;   // zeros, enough for any m or n here
    size_t workspace_bytes = size_t{32} << 20;
};

bool ok(cublasStatus_t status, const char* what) {
    if (status == CUBLAS_STATUS_SUCCESS) return true;
    std::printf("  %s: status %d\n", what, static_cast<int>(status));
    return false;
}

float time_us(const Probe& probe, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a_layout, cublasLtMatrixLayout_t b_layout,
              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d) {
    const float alpha = 1.0f, beta = 0.0f;
    auto run = [&] {
        return cublasLtMatmul(probe.handle, op, &alpha, a, a_layout, b, b_layout, &beta, d, d_layout, d, d_layout, &algo,
                              probe.workspace, probe.workspace_bytes, nullptr);
    };
    if (run() != CUBLAS_STATUS_SUCCESS) return -1.0f;
    cudaEvent_t begin, end;
    cudaEventCreate(&begin);
    cudaEventCreate(&end);
    const int rounds = 20;
    cudaEventRecord(begin);
    for (int i = 0; i < rounds; ++i) run();
    cudaEventRecord(end);
    cudaEventSynchronize(end);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, begin, end);
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    return ms * 1000.0f / rounds;
}

void probe_descriptor(const Probe& probe, const Descriptor& d) {
    cublasLtMatmulDesc_t op = nullptr;
    if (!ok(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc")) return;
    const cublasOperation_t transpose = CUBLAS_OP_T, plain = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain));
    const int8_t fast = d.fast_accumulation ? 1 : 0;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast));
    if (d.scale_vectors) {
        const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode));
    }
    if (d.pointers_first) {
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &probe.scales, sizeof(probe.scales));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &probe.scales, sizeof(probe.scales));
    }
    // Column-major: op(A) = A^T is [rows_a, k], op(B) = B is [k, rows_b], D is [rows_a, rows_b].
    const int rows_a = d.weight_as_b ? d.m : d.n, rows_b = d.weight_as_b ? d.n : d.m;
    cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, d_layout = nullptr;
    cublasLtMatrixLayoutCreate(&a_layout, CUDA_R_8F_E4M3, d.k, rows_a, d.k);
    cublasLtMatrixLayoutCreate(&b_layout, CUDA_R_8F_E4M3, d.k, rows_b, d.k);
    cublasLtMatrixLayoutCreate(&d_layout, d.out, rows_a, rows_b, rows_a);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &probe.workspace_bytes,
                                         sizeof(probe.workspace_bytes));
    if (d.alignment_prefs) {
        const uint32_t align = 16;
        for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
            cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
    }
    cublasLtMatmulHeuristicResult_t results[8];
    int num_results = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(probe.handle, op, a_layout, b_layout, d_layout, d_layout,
                                                                 pref, 8, results, &num_results);
    float best_us = -1.0f;
    if (status == CUBLAS_STATUS_SUCCESS && num_results > 0) {
        void *a = nullptr, *b = nullptr, *out = nullptr;
        cudaMalloc(&a, size_t{1} * d.k * rows_a);
        cudaMalloc(&b, size_t{1} * d.k * rows_b);
        cudaMalloc(&out, size_t{4} * d.m * d.n);
        cudaMemset(a, 0x30, size_t{1} * d.k * rows_a);
        cudaMemset(b, 0x30, size_t{1} * d.k * rows_b);
        if (d.scale_vectors && !d.pointers_first) {   // set now, as Gemm's run would
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &probe.scales, sizeof(probe.scales));
            cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &probe.scales, sizeof(probe.scales));
        }
        for (int i = 0; i < num_results; ++i) {
            const float us = time_us(probe, op, a_layout, b_layout, d_layout, results[i].algo, a, b, out);
            if (us >= 0.0f && (best_us < 0.0f || us < best_us)) best_us = us;
        }
        cudaFree(a);
        cudaFree(b);
        cudaFree(out);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) std::printf("  CUDA error: %s\n", cudaGetErrorString(err));
    }
    std::printf("m=%-5d n=%-5d k=%-5d D=%s vectors=%d pointers_first=%d fast=%d align=%d weight_as_b=%d: status %d, "
                "%d algorithms, fastest %.1f us\n",
                d.m, d.n, d.k, d.out == CUDA_R_16BF ? "bf16" : "f32 ", d.scale_vectors, d.pointers_first,
                d.fast_accumulation, d.alignment_prefs, d.weight_as_b, static_cast<int>(status), num_results, best_us);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(a_layout);
    cublasLtMatrixLayoutDestroy(b_layout);
    cublasLtMatrixLayoutDestroy(d_layout);
    cublasLtMatmulDescDestroy(op);
}

}  // namespace

int main() {
    std::printf("cuBLASLt %zu, CUDA runtime %zu\n", cublasLtGetVersion(), cublasLtGetCudartVersion());
    Probe probe;
    if (cublasLtCreate(&probe.handle) != CUBLAS_STATUS_SUCCESS || cudaMalloc(&probe.workspace, probe.workspace_bytes) != cudaSuccess ||
        cudaMalloc(&probe.scales, size_t{4} << 20) != cudaSuccess) {
        std::printf("no GPU or no cuBLASLt\n");
        return 1;
    }
    cudaMemset(probe.scales, 0, size_t{4} << 20);
    // Every combination at one shape (o_proj at 2048 tokens)...
    for (const bool vectors : {false, true})
        for (const cudaDataType_t out : {CUDA_R_16BF, CUDA_R_32F})
            for (const bool pointers_first : {false, true})
                for (const bool fast : {true, false})
                    for (const bool align : {true, false})
                        for (const bool weight_as_b : {false, true})
                            probe_descriptor(probe, {2048, 4096, 4096, out, vectors, pointers_first, fast, align, weight_as_b});
    // ...then the 8B's shapes with bf16 out, pointers first, both operand orders, unit and vector scales.
    const int ns[] = {6144, 4096, 28672, 4096}, ks[] = {4096, 4096, 4096, 14336};
    for (const int m : {16, 64, 256, 1024, 2048, 4096})
        for (int shape = 0; shape < 4; ++shape)
            for (const bool vectors : {false, true})
                for (const bool weight_as_b : {false, true})
                    probe_descriptor(probe, {m, ns[shape], ks[shape], CUDA_R_16BF, vectors, true, true, true, weight_as_b});
    cudaFree(probe.scales);
    cudaFree(probe.workspace);
    cublasLtDestroy(probe.handle);
    return 0;
}
