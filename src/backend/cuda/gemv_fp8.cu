// fp8_gemv: d[n] (+)= (W[n, k] a[k]) * w_scale[n] for a one-token step over FP8 (E4M3) weights: the
// bf16 gemv's scheme (gemv_common.cuh: warps per row, k split, reduction in slice order) with 16 weights
// per 16-byte load, turned into floats by integer ops (e4m3_scaled) and multiplied with the bf16
// activations in fp32; the row's scale is applied once to its sum. Half the weight bytes of
// the bf16 gemv per row. One template parameter (the split count): four instances.
#include "backend/cuda/gemv_common.cuh"
#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using kernels::Bf16x8;
using namespace gemv_parts;

constexpr int kUnroll = 8;   // 16-byte weight loads in flight per lane (128 weights)

__device__ __forceinline__ int4 load_weight(const int4* p) {   // streamed past L1, as in gemv.cu
    int4 v;
    asm("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// Byte j of `u` as a float equal to its E4M3 value times 2^-120: the sign bit moved to bit 31 and the
// 7 exponent/mantissa bits to bits 26-20, so the E4M3 exponent (bias 7) reads as a float exponent
// (bias 127). Exact for every finite code, subnormals included (they become float subnormals, which
// the FMA keeps). Integer ops only: the hardware's FP8 and f16 conversions run at a fraction of the
// FMA rate, and with them this kernel was conversion-bound (0.84x of the bf16 gemv on the 8B's shapes
// while reading half the bytes; H200, 2026-12-03).
template <int j>
__device__ __forceinline__ float e4m3_scaled(uint32_t u) {
    const uint32_t t = u << (24 - 8 * j);
    return __uint_as_float((t & 0x80000000u) | ((t >> 4) & 0x07f00000u));
}
constexpr float kUnscale = 0x1p120f;   // undoes e4m3_scaled's 2^-120, with the row's scale

// acc += w . a * 2^-120 over 16 weights (one 16-byte word) and the matching 16 activations (two Bf16x8).
__device__ __forceinline__ void fma16(float& acc, const int4& w, const Bf16x8& a0, const Bf16x8& a1) {
    const uint32_t words[4] = {static_cast<uint32_t>(w.x), static_cast<uint32_t>(w.y), static_cast<uint32_t>(w.z),
                               static_cast<uint32_t>(w.w)};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const Bf16x8& a = i < 2 ? a0 : a1;
        const float2 lo = __bfloat1622float2(a.h[(i % 2) * 2]), hi = __bfloat1622float2(a.h[(i % 2) * 2 + 1]);
        acc = fmaf(e4m3_scaled<0>(words[i]), lo.x, acc);
        acc = fmaf(e4m3_scaled<1>(words[i]), lo.y, acc);
        acc = fmaf(e4m3_scaled<2>(words[i]), hi.x, acc);
        acc = fmaf(e4m3_scaled<3>(words[i]), hi.y, acc);
    }
}

// sum += the row's words from c on (c, c + 32, ...; c advances) while a whole pass of kLoads fits before
// `end`, kLoads loads issued before their products. Passes of 8, then 4 and 2, then single words: a
// lane of an 8B matrix split over two warps holds only 4-14 words, which single words would fetch one
// round trip at a time.
template <int kLoads>
__device__ __forceinline__ void passes(const int4* w_row, const Bf16x8* x, int& c, int end, float& sum) {
    for (; c + 32 * (kLoads - 1) < end; c += 32 * kLoads) {
        int4 wv[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u) wv[u] = load_weight(&w_row[c + 32 * u]);
#pragma unroll
        for (int u = 0; u < kLoads; ++u) fma16(sum, wv[u], x[2 * (c + 32 * u)], x[2 * (c + 32 * u) + 1]);
    }
}

// grid: ceil(n / (kWarpsPerBlock / kSplits)). Word c of a row is weights [16c, 16c + 16) and
// activation words 2c, 2c + 1.
template <int kSplits>
__global__ void __launch_bounds__(kThreads, 8) fp8_gemv_kernel(const bf16* __restrict__ a, const uint8_t* __restrict__ w,
                                                            const float* __restrict__ w_scale, void* __restrict__ d,
                                                            int n, int k, bool f32_out, bool accumulate) {
    __shared__ float partial[kWarpsPerBlock][1];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row = blockIdx.x * (kWarpsPerBlock / kSplits) + warp / kSplits;
    if (kSplits == 1 && row >= n) return;
    const int4* w_row = reinterpret_cast<const int4*>(w + static_cast<int64_t>(min(row, n - 1)) * k);
    const Bf16x8* x = reinterpret_cast<const Bf16x8*>(a);
    kernels::pdl_wait();
    float sum[1] = {0.0f};
    const Slice s = slice_of<kSplits>(k / 16, warp % kSplits);
    int c = s.begin + lane;
    passes<kUnroll>(w_row, x, c, s.end, sum[0]);
    passes<kUnroll / 2>(w_row, x, c, s.end, sum[0]);
    passes<kUnroll / 4>(w_row, x, c, s.end, sum[0]);
    for (; c < s.end; c += 32) fma16(sum[0], load_weight(&w_row[c]), x[2 * c], x[2 * c + 1]);
    kernels::pdl_launch_dependents();
    if (!reduce_rows<kSplits>(sum, partial, warp, lane, row < n)) return;
    const float v = sum[0] * kUnscale * w_scale[row];
    if (f32_out) {
        float* out = static_cast<float*>(d);
        out[row] = accumulate ? out[row] + v : v;
    } else {
        static_cast<bf16*>(d)[row] = __float2bfloat16(v);
    }
}

}  // namespace

bool fp8_gemv_applies(const void* a, const void* w, const void* d, int m, int k) {
    return m == 1 && k % 16 == 0 && k > 0 && kernels::host_aligned16(a) && kernels::host_aligned16(w) &&
           kernels::host_aligned(d, 4);
}

cudaError_t fp8_gemv(const bf16* a, const uint8_t* w, const float* w_scale, void* d, bool f32_out, int m, int n,
                     int k, bool accumulate, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (!fp8_gemv_applies(a, w, d, m, k) || n < 0 || w_scale == nullptr || (accumulate && !f32_out)) {
        return cudaErrorInvalidValue;
    }
    return launch_split(choose_splits(n, k / 16), n, stream, fp8_gemv_kernel<1>, fp8_gemv_kernel<2>,
                        fp8_gemv_kernel<4>, fp8_gemv_kernel<8>, a, w, w_scale, d, n, k, f32_out, accumulate);
}

}  // namespace hichat::cuda
