// E4M3 codes as bf16 on the tensor-core FP8 paths (the FP8 GEMV, the FP8-KV attention kernels): the sign
// kept, the 7 exponent and mantissa bits moved down by 4 into bf16's places, which makes each code's
// value x 2^-120 exactly (E4M3 subnormals become bf16 subnormals). The other operand goes in x 2^100
// (kBf16x2Pow100) so that the products stay in fp32's normal range; the caller takes 2^20 back out.
#pragma once

#include <cstdint>

namespace hichat::cuda::kernels {

constexpr uint32_t kBf16x2Pow100 = 0x71807180u;   // bf16x2 (2^100, 2^100)

// Bytes 1 and 3 of x (E4M3) as bf16x2 worth their values x 2^-120.
__device__ __forceinline__ uint32_t fp8_pair_to_bf16x2(uint32_t x) {
    return (x & 0x80008000u) | ((x & 0x7f007f00u) >> 4);
}

// 16 codes in order -> two 16-byte chunks of 8 bf16 each (codes 0-7, 8-15), x 2^-120.
__device__ __forceinline__ void e4m3x16_to_bf16(uint4 codes, uint4& lo, uint4& hi) {
    auto pairs = [](uint32_t w, uint32_t& a, uint32_t& b) {
        a = fp8_pair_to_bf16x2(__byte_perm(w, 0u, 0x1404));   // codes 0, 1 of w into the high bytes
        b = fp8_pair_to_bf16x2(__byte_perm(w, 0u, 0x3424));   // codes 2, 3
    };
    pairs(codes.x, lo.x, lo.y);
    pairs(codes.y, lo.z, lo.w);
    pairs(codes.z, hi.x, hi.y);
    pairs(codes.w, hi.z, hi.w);
}

}  // namespace hichat::cuda::kernels
