// Choosing tokens from fp32 logits on the device, one block per row.
//
// argmax_rows: greedy. NaN never wins; ties go to the lowest index; a row with no number above -inf
// answers 0.
//
// sample_rows never sorts the vocabulary. p = exp((l - max) / T) lies in [0, 1], and the bits of a
// non-negative float order like its value, so every filter is a threshold on those bits ("keys"):
//   top-k  the k-th largest key (counting);
//   top-p  the largest key whose mass from the top reaches top_p * (mass left after top-k);
//   min-p  the key of min_p itself (the most likely token has p == 1 exactly).
// The first two are radix selects: keys are below 2^30 (p <= 1), so three passes of 10 bits, each a
// 1024-bin histogram in shared memory (one bin per thread) over the row, which stays in L2 between
// passes when few rows run at once. Masses are fixed point (p * 2^40, truncated, as uint64): every sum
// is exact and independent of the order of the atomics, so a row always answers the same token and the
// segment sums of the pick agree bit for bit with its scan. The pick sums candidate masses per segment
// of the row (one pass), finds the segment holding u * total, then scans only that segment in index
// order.
#include <cfloat>
#include <climits>

#include "backend/cuda/kernel_util.cuh"
#include "backend/cuda/ops.h"

namespace hichat::cuda {
namespace {

using u64 = unsigned long long;

constexpr int kThreads = 1024;
constexpr int kNoIndex = 0x7fffffff;
constexpr int kArgmaxLoads = 8;                  // argmax: float4 loads in flight per thread

constexpr int kItems = 4;                        // logits per thread per tile (one float4)
constexpr int kTile = kThreads * kItems;         // logits per tile, in index order
constexpr int kDigitBits = 10;                   // radix digit; three digits cover keys < 2^30
constexpr int kBins = 1 << kDigitBits;
constexpr int kMaxSegments = 256;                // segments of the pick's first pass
constexpr float kMinProb = 0x1p-40f;             // smaller p count as 0 (their fixed-point mass is 0)
constexpr float kFixedOne = 0x1p40f;             // fixed-point mass of p == 1
constexpr int kMaxVocab = 1 << 23;               // vocab * 2^40 fits in uint64; tile indices fit in int
static_assert(kBins == kThreads, "one histogram bin per thread");

struct Best {
    float value;
    int index;
};

__device__ __forceinline__ void take(Best& best, float v, int i) {
    if (v > best.value || (v == best.value && i < best.index)) best = {v, i};
}

__device__ __forceinline__ Best warp_best(Best b) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float v = __shfl_xor_sync(kernels::kFullMask, b.value, offset);
        const int i = __shfl_xor_sync(kernels::kFullMask, b.index, offset);
        take(b, v, i);
    }
    return b;
}

// Best over the block; every thread gets it. scratch holds 32 entries; ends with a barrier.
__device__ __forceinline__ Best block_best(Best b, Best* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    b = warp_best(b);
    if (lane == 0) scratch[warp] = b;
    __syncthreads();
    b = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : Best{-INFINITY, kNoIndex};
    b = warp_best(b);
    __syncthreads();
    return b;
}

__global__ void argmax_kernel(const float* logits, int vocab, int32_t* out, bool vec) {
    __shared__ Best scratch[32];
    kernels::pdl_launch_dependents();
    kernels::pdl_wait();
    const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
    Best best{-INFINITY, kNoIndex};
    if (vec) {
        // kArgmaxLoads float4 loads in flight per thread and pass (one at a time, a 128K-word row took
        // 31 round trips: 16 us at batch 1). Each thread still visits increasing indices.
        const float4* row4 = reinterpret_cast<const float4*>(row);
        const int n4 = vocab / 4;
        for (int c0 = threadIdx.x; c0 < n4; c0 += blockDim.x * kArgmaxLoads) {
            float4 v[kArgmaxLoads];
#pragma unroll
            for (int u = 0; u < kArgmaxLoads; ++u) {
                const int c = c0 + u * static_cast<int>(blockDim.x);
                if (c < n4) v[u] = row4[c];
            }
#pragma unroll
            for (int u = 0; u < kArgmaxLoads; ++u) {
                const int c = c0 + u * static_cast<int>(blockDim.x);
                if (c >= n4) break;
                take(best, v[u].x, 4 * c);
                take(best, v[u].y, 4 * c + 1);
                take(best, v[u].z, 4 * c + 2);
                take(best, v[u].w, 4 * c + 3);
            }
        }
    } else {
        for (int i = threadIdx.x; i < vocab; i += blockDim.x) take(best, row[i], i);
    }
    best = block_best(best, scratch);
    if (threadIdx.x == 0) out[blockIdx.x] = best.index == kNoIndex ? 0 : best.index;
}

// ---- sample_rows -------------------------------------------------------------------------------

struct SampleShared {
    u64 hist[kBins];                   // [kBins] radix histogram (counts or fixed-point masses)
    u64 scan[kThreads];                // [kThreads] inclusive scans (bins in descending digit order; pick)
    u64 segment_mass[kMaxSegments];    // [num_segments] candidate mass per segment of the row
    u64 warp_scratch[32];
    Best best_scratch[32];
    int selected;                      // radix select: first bin reaching the need, or INT_MAX
    int last_nonempty;                 // radix select: last non-empty bin, or -1
    int picked;                        // pick: token index, or INT_MAX
    int segment;                       // pick: segment holding the target
    u64 segment_carry;                 // pick: candidate mass before that segment
    u64 target;                        // pick: the picked token's cumulative mass first exceeds this
};

// One row and how its logits turn into probabilities.
struct RowView {
    const float* logits;   // [vocab]
    int vocab;
    bool vec;              // float4 loads allowed (vocab % 4 == 0, row 16-byte aligned)
    float max_logit;
    float inv_temperature;

    // Logits base .. base + 3 (base a multiple of 4); -inf past the end.
    __device__ __forceinline__ void load(int base, float (&v)[kItems]) const {
        if (vec && base < vocab) {
            const float4 f = *reinterpret_cast<const float4*>(logits + base);
            v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
            return;
        }
#pragma unroll
        for (int j = 0; j < kItems; ++j) v[j] = base + j < vocab ? logits[base + j] : -INFINITY;
    }

    // exp((l - max) / T) in [0, 1]; 0 for NaN and -inf; exactly 1 at the maximum (also when it is +inf).
    __device__ __forceinline__ float prob(float l) const {
        if (!(l > -INFINITY)) return 0.0f;
        if (l == max_logit) return 1.0f;
        return fminf(expf((l - max_logit) * inv_temperature), 1.0f);
    }
};

__device__ __forceinline__ uint32_t key_of(float p) { return __float_as_uint(p); }
__device__ __forceinline__ u64 fixed_mass(float p) { return static_cast<u64>(p * kFixedOne); }

__device__ __forceinline__ u64 warp_sum_u64(u64 v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kernels::kFullMask, v, offset);
    return v;
}

// Sum over the block; every thread gets it. Ends with a barrier so scratch may be reused.
__device__ __forceinline__ u64 block_sum_u64(u64 v, u64* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum_u64(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = warp_sum_u64(lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : 0);
    __syncthreads();
    return v;
}

// Inclusive prefix sum over the threads in order. Ends with a barrier so scratch may be reused.
__device__ __forceinline__ u64 block_inclusive_scan_u64(u64 v, u64* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const u64 n = __shfl_up_sync(kernels::kFullMask, v, offset);
        if (lane >= offset) v += n;
    }
    if (lane == 31) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        u64 w = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : 0;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const u64 n = __shfl_up_sync(kernels::kFullMask, w, offset);
            if (lane >= offset) w += n;
        }
        scratch[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += scratch[warp - 1];
    __syncthreads();
    return v;
}

// Maximum of the row (lowest index on ties; NaN never wins; padding never counts).
__device__ Best row_max(const RowView& row, SampleShared& sh) {
    Best best{-INFINITY, kNoIndex};
    for (int base = kItems * threadIdx.x; base < row.vocab; base += kTile) {
        float v[kItems];
        row.load(base, v);
#pragma unroll
        for (int j = 0; j < kItems; ++j)
            if (base + j < row.vocab) take(best, v[j], base + j);
    }
    return block_best(best, sh.best_scratch);
}

// sh.hist[d] = count (or fixed-point mass) of keys >= lower whose bits above shift + kDigitBits equal
// prefix's, binned by the kDigitBits bits at shift.
__device__ void build_histogram(const RowView& row, uint32_t lower, uint32_t prefix, int shift, bool mass,
                                SampleShared& sh) {
    sh.hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) {
        sh.selected = INT_MAX;
        sh.last_nonempty = -1;
    }
    __syncthreads();
    const int high = shift + kDigitBits;
    for (int base = kItems * threadIdx.x; base < row.vocab; base += kTile) {
        float v[kItems];
        row.load(base, v);
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            const float p = row.prob(v[j]);
            const uint32_t key = key_of(p);
            if (key >= lower && (key >> high) == (prefix >> high))
                atomicAdd(&sh.hist[(key >> shift) & (kBins - 1)], mass ? fixed_mass(p) : u64{1});
        }
    }
    __syncthreads();
}

// Fixed-point mass that top_p of `total` must reach (at least 1, so the most likely token stays).
__device__ __forceinline__ u64 top_p_need(u64 total, float top_p) {
    const double need = ceil(static_cast<double>(fmaxf(top_p, 0.0f)) * static_cast<double>(total));
    return need >= static_cast<double>(total) ? total : static_cast<u64>(need);
}

// The largest key T >= lower such that the keys >= T (and >= lower) reach `need` in count, or, with
// mass, reach top_p times their total mass in fixed-point mass. When they never do, the smallest key
// present. Ties at T are all inside. Radix select, most significant digit first.
__device__ uint32_t radix_select(const RowView& row, uint32_t lower, bool mass, u64 need, float top_p,
                                 SampleShared& sh) {
    uint32_t prefix = 0;
    for (int shift = 2 * kDigitBits; shift >= 0; shift -= kDigitBits) {
        build_histogram(row, lower, prefix, shift, mass, sh);
        // Thread t owns digit kBins - 1 - t: scanning threads in order walks the keys from the top.
        const u64 v = sh.hist[kBins - 1 - threadIdx.x];
        const u64 incl = block_inclusive_scan_u64(v, sh.warp_scratch);
        sh.scan[threadIdx.x] = incl;
        __syncthreads();
        if (mass && shift == 2 * kDigitBits) need = top_p_need(sh.scan[kThreads - 1], top_p);
        need = need > 0 ? need : 1;
        const u64 excl = threadIdx.x > 0 ? sh.scan[threadIdx.x - 1] : 0;
        if (v > 0) {
            if (excl < need && incl >= need) atomicMin(&sh.selected, static_cast<int>(threadIdx.x));
            atomicMax(&sh.last_nonempty, static_cast<int>(threadIdx.x));
        }
        __syncthreads();
        int r = sh.selected != INT_MAX ? sh.selected : sh.last_nonempty;
        r = r > 0 ? r : 0;
        prefix |= static_cast<uint32_t>(kBins - 1 - r) << shift;
        need -= r > 0 ? sh.scan[r - 1] : 0;   // what the chosen bin itself must still provide
        __syncthreads();                      // everyone has read hist, scan and selected
    }
    return prefix;
}

// The smallest key a candidate may have: the intersection of the three filters and p >= 2^-40.
__device__ uint32_t candidate_threshold(const RowView& row, const SampleRowParams& params, SampleShared& sh) {
    uint32_t threshold = key_of(kMinProb);
    if (params.top_k > 0 && params.top_k < row.vocab)
        threshold = radix_select(row, threshold, false, static_cast<u64>(params.top_k), 0.0f, sh);
    if (params.top_p < 1.0f) threshold = radix_select(row, threshold, true, 0, params.top_p, sh);
    if (params.min_p > 0.0f) threshold = max(threshold, key_of(fminf(params.min_p, 1.0f)));
    return threshold;
}

// Fixed-point masses of logits base .. base + 3; 0 for those below the threshold.
__device__ __forceinline__ void candidate_masses(const RowView& row, uint32_t threshold, int base,
                                                 u64 (&q)[kItems]) {
    float v[kItems];
    row.load(base, v);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
        const float p = row.prob(v[j]);
        q[j] = key_of(p) >= threshold ? fixed_mass(p) : 0;
    }
}

struct Segments {
    int num_tiles, tiles_per_segment, num_segments;
    __device__ Segments(int vocab) {
        num_tiles = (vocab + kTile - 1) / kTile;
        tiles_per_segment = (num_tiles + kMaxSegments - 1) / kMaxSegments;
        num_segments = (num_tiles + tiles_per_segment - 1) / tiles_per_segment;
    }
    __device__ int first_tile(int s) const { return s * tiles_per_segment; }
    __device__ int end_tile(int s) const { return min(num_tiles, (s + 1) * tiles_per_segment); }
};

// Pass one of the pick: sh.segment_mass[s] = candidate mass of segment s.
__device__ void sum_segments(const RowView& row, uint32_t threshold, const Segments& seg, SampleShared& sh) {
    for (int s = 0; s < seg.num_segments; ++s) {
        u64 local = 0;
        for (int tile = seg.first_tile(s); tile < seg.end_tile(s); ++tile) {
            u64 q[kItems];
            candidate_masses(row, threshold, tile * kTile + kItems * threadIdx.x, q);
            local += q[0] + q[1] + q[2] + q[3];
        }
        const u64 total = block_sum_u64(local, sh.warp_scratch);
        if (threadIdx.x == 0) sh.segment_mass[s] = total;
    }
}

// Thread 0: target = floor(u * total) (below total), and the segment whose cumulative mass first
// exceeds it.
__device__ void locate_target(float u, const Segments& seg, SampleShared& sh) {
    u64 total = 0;
    for (int s = 0; s < seg.num_segments; ++s) total += sh.segment_mass[s];
    const double unit = static_cast<double>(fmaxf(u, 0.0f));   // NaN -> 0
    u64 target = static_cast<u64>(unit * static_cast<double>(total));
    if (total > 0 && target >= total) target = total - 1;      // u >= 1 (or rounding): the last candidate
    u64 carry = 0;
    int s = 0;
    while (s < seg.num_segments - 1 && carry + sh.segment_mass[s] <= target) carry += sh.segment_mass[s++];
    sh.segment = s;
    sh.segment_carry = carry;
    sh.target = target;
    sh.picked = INT_MAX;
}

// Pass two: scan the chosen segment in index order for the first token whose cumulative candidate
// mass exceeds the target. Exact integer sums make that token unique and inside the segment.
__device__ int scan_segment(const RowView& row, uint32_t threshold, const Segments& seg, SampleShared& sh) {
    const int s = sh.segment;
    const u64 target = sh.target;
    u64 carry = sh.segment_carry;
    for (int tile = seg.first_tile(s); tile < seg.end_tile(s); ++tile) {
        const int base = tile * kTile + kItems * threadIdx.x;
        u64 q[kItems];
        candidate_masses(row, threshold, base, q);
        const u64 incl = block_inclusive_scan_u64(q[0] + q[1] + q[2] + q[3], sh.warp_scratch);
        sh.scan[threadIdx.x] = incl;
        __syncthreads();
        u64 running = carry + (threadIdx.x > 0 ? sh.scan[threadIdx.x - 1] : 0);
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
            if (q[j] > 0 && running <= target && running + q[j] > target) atomicMin(&sh.picked, base + j);
            running += q[j];
        }
        const u64 tile_total = sh.scan[kThreads - 1];
        __syncthreads();   // picked is final for this tile; scan may be rewritten
        if (sh.picked != INT_MAX) break;
        carry += tile_total;
    }
    return sh.picked;
}

__device__ int pick(const RowView& row, uint32_t threshold, float u, SampleShared& sh) {
    const Segments seg(row.vocab);
    sum_segments(row, threshold, seg, sh);
    __syncthreads();
    if (threadIdx.x == 0) locate_target(u, seg, sh);
    __syncthreads();
    return scan_segment(row, threshold, seg, sh);
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(const float* logits, int vocab, const SampleRowParams* params, int32_t* out, bool vec) {
    __shared__ SampleShared sh;
    const SampleRowParams p = params[blockIdx.x];
    RowView row{logits + static_cast<int64_t>(blockIdx.x) * vocab, vocab, vec, 0.0f, 0.0f};
    const Best best = row_max(row, sh);
    int token;
    if (!(best.value > -INFINITY)) {
        token = 0;                       // nothing but NaN and -inf
    } else if (!(p.temperature > 0.0f)) {
        token = best.index;              // greedy
    } else {
        row.max_logit = best.value;
        row.inv_temperature = 1.0f / p.temperature;
        token = pick(row, candidate_threshold(row, p, sh), p.u, sh);
        if (token == INT_MAX) token = best.index;   // unreachable: the most likely token is a candidate
    }
    if (threadIdx.x == 0) out[blockIdx.x] = token;
}

}  // namespace

cudaError_t argmax_rows(const float* logits, int rows, int vocab, int32_t* out, cudaStream_t stream) {
    if (rows <= 0) return rows < 0 ? cudaErrorInvalidValue : cudaSuccess;
    if (vocab <= 0) return cudaErrorInvalidValue;
    const bool vec = vocab % 4 == 0 && kernels::host_aligned16(logits);
    return kernels::launch_pdl(argmax_kernel, dim3(rows), dim3(kThreads), 0, stream, logits, vocab, out, vec);
}

size_t sample_rows_workspace_bytes(int rows, int vocab) { return 0; }

cudaError_t sample_rows(const float* logits, int rows, int vocab, const SampleRowParams* params, int32_t* out,
                        void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (rows <= 0) return rows < 0 ? cudaErrorInvalidValue : cudaSuccess;
    if (vocab <= 0 || vocab > kMaxVocab || logits == nullptr || params == nullptr || out == nullptr)
        return cudaErrorInvalidValue;
    if (workspace_bytes < sample_rows_workspace_bytes(rows, vocab)) return cudaErrorInvalidValue;
    const bool vec = vocab % 4 == 0 && kernels::host_aligned16(logits);
    sample_kernel<<<rows, kThreads, 0, stream>>>(logits, vocab, params, out, vec);
    return cudaGetLastError();
}

}  // namespace hichat::cuda
