#include "backend/cpu/kernel_table.h"

namespace hichat::cpu {

const KernelTable& kernels_for(SimdLevel level) {
    static const KernelTable kPortable{SimdLevel::kPortable,  1, 1,
                                       portable::gemv,        portable::gemm,
                                       portable::dot_rows,    portable::sum_rows_weighted,
                                       portable::dot_rows_bf16,          portable::dot_rows_f16,
                                       portable::sum_rows_weighted_bf16, portable::sum_rows_weighted_f16,
                                       portable::linear_i8,   "portable",
                                       portable::linear_q4,   "portable",
                                       portable::softmax,     portable::silu_mul};
#if defined(HICHAT_CPU_X86_KERNELS)
    static const KernelTable kAvx2{SimdLevel::kAvx2, 16, 8,
                                   avx2::gemv,       avx2::gemm,
                                   avx2::dot_rows,   avx2::sum_rows_weighted,
                                   avx2::dot_rows_bf16,          avx2::dot_rows_f16,
                                   avx2::sum_rows_weighted_bf16, avx2::sum_rows_weighted_f16,
                                   avx2::linear_i8,  "avx2",
                                   avx2::linear_q4,  "avx2",
                                   avx2::softmax,     avx2::silu_mul};
    // int8 and 4-bit weights at the AVX-512 levels: vpdpbusd where the CPU has AVX512_VNNI, else the AVX2 kernel.
    const bool vnni = cpu_has_avx512_vnni();
    const auto linear_i8_512 = vnni ? avx512_vnni::linear_i8 : avx2::linear_i8;
    const char* linear_i8_512_path = vnni ? "avx512_vnni" : "avx2";
    const auto linear_q4_512 = vnni ? avx512_vnni::linear_q4 : avx2::linear_q4;
    static const KernelTable kAvx512{SimdLevel::kAvx512, 32, 16,
                                     avx512::gemv,       avx512::gemm,
                                     avx512::dot_rows,   avx512::sum_rows_weighted,
                                     avx512::dot_rows_bf16,          avx512::dot_rows_f16,
                                     avx512::sum_rows_weighted_bf16, avx512::sum_rows_weighted_f16,
                                     linear_i8_512,      linear_i8_512_path,
                                     linear_q4_512,      linear_i8_512_path,
                                     avx512::softmax,     avx512::silu_mul};
    // AVX-512 BF16: vdpbf16ps for bf16 weights (the AVX-512 kernels for other dtypes), AVX-512 elsewhere.
    static const KernelTable kAvx512Bf16{SimdLevel::kAvx512Bf16, 32, 16,
                                         avx512_bf16::gemv,       avx512_bf16::gemm,
                                         avx512::dot_rows,        avx512::sum_rows_weighted,
                                         avx512::dot_rows_bf16,          avx512::dot_rows_f16,
                                         avx512::sum_rows_weighted_bf16, avx512::sum_rows_weighted_f16,
                                         linear_i8_512,           linear_i8_512_path,
                                         linear_q4_512,           linear_i8_512_path,
                                         avx512::softmax,         avx512::silu_mul};
    switch (level) {
        case SimdLevel::kAvx512Bf16: return kAvx512Bf16;
        case SimdLevel::kAvx512: return kAvx512;
        case SimdLevel::kAvx2: return kAvx2;
        case SimdLevel::kPortable: return kPortable;
    }
#endif
    return kPortable;
}

}  // namespace hichat::cpu
