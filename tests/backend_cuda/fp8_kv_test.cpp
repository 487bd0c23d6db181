// The FP8 (E4M3) KV cache against the CPU computing on the same quantized values:
//  - paged_attention_fp8 (decode, split-KV decode past 4096 keys, prefill, mixed batches with their
//    one-token sequences in either kernel) against cpu::paged_attention on the dequantized cache
//    (code * scale as float): head dims 64/128, GQA 1:1 to 8:1 and Llama-3's 32/8, block sizes 7/16/32,
//    scales 0.37/1.9, 1 and a saturating 0.01, subnormal codes in every cache; a guard row after the
//    output must stay untouched;
//  - at unit scales, paged_attention_fp8 on the codes against paged_attention on a bf16 cache holding
//    the decoded codes (every E4M3 value is exact in bf16);
//  - the refusals (bad scales, head_dim 112, caches not 16-byte aligned), with nothing launched;
//  - qkv_rope_kv_write with kv_fp8: q_out as the bf16 path's reference, the cache bytes exactly the
//    codes of the fp32 reference over the scale, padding tokens (slot -1) writing nothing.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "backend/cpu/ops.h"
#include "backend/cuda/ops.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;

constexpr uint16_t kPoisonBf16 = 0xffff;   // poisoned() fills with 0xff bytes (a NaN code in E4M3 too)
constexpr uint8_t kPoisonCode = 0xff;
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

bool is_nan_code(uint8_t c) { return (c & 0x7fu) == 0x7fu; }
bool is_subnormal_code(uint8_t c) { return (c & 0x78u) == 0 && (c & 0x07u) != 0; }
bool is_saturated_code(uint8_t c) { return (c & 0x7fu) == 0x7eu; }   // +-448

std::vector<float> dequantize(const std::vector<uint8_t>& codes, float scale) {
    std::vector<float> out(codes.size());
    for (size_t i = 0; i < codes.size(); ++i) out[i] = fp8_e4m3_to_f32(codes[i]) * scale;
    return out;
}

// ---------------------------------------------------------------- paged_attention_fp8

struct Seq {
    int num_new;   // new tokens this step
    int kv_len;    // tokens in the cache after the step (>= num_new)
};

struct AttnCase {
    int num_heads, num_kv_heads, head_dim, block_size;
    std::vector<Seq> seqs;
    float k_scale = 0.37f, v_scale = 1.9f;
    float value_range = 2.0f;   // K/V values uniform in [-range, range] before quantization
};

// Host copy of one batch: block tables over a shuffled pool (unused entries -1), E4M3 caches, bf16 q.
struct Fp8Batch {
    int max_blocks = 0, max_q = 0, max_kv = 0, num_single = 0;
    std::vector<int32_t> tables, cu_q{0}, lens_kv;
    std::vector<uint8_t> k_codes, v_codes;
    std::vector<uint16_t> q_bits;
};

// Saturated codes of values uniform in [-range, range] over scale; about one in eight is forced into the
// E4M3 subnormal range (|x| < 2^-6 * scale). f32_to_fp8_e4m3 never gives a NaN code for a finite value.
std::vector<uint8_t> random_cache_codes(std::mt19937& rng, size_t n, float range, float scale) {
    const std::vector<float> x = random_floats(rng, n, -range, range);
    const float subnormal_bound = std::ldexp(1.0f, -6) * scale;
    std::vector<uint8_t> codes(n);
    for (size_t i = 0; i < n; ++i) {
        const float v = rng() % 8 == 0 ? x[i] / range * subnormal_bound : x[i];
        codes[i] = f32_to_fp8_e4m3(v / scale);
    }
    return codes;
}

Fp8Batch make_batch(const AttnCase& c, std::mt19937& rng) {
    Fp8Batch b;
    int total_blocks = 0;
    for (const Seq& s : c.seqs) {
        const int nb = (s.kv_len + c.block_size - 1) / c.block_size;
        b.max_blocks = std::max(b.max_blocks, nb);
        total_blocks += nb;
        b.max_q = std::max(b.max_q, s.num_new);
        b.max_kv = std::max(b.max_kv, s.kv_len);
        b.num_single += s.num_new == 1 ? 1 : 0;
        b.cu_q.push_back(b.cu_q.back() + s.num_new);
        b.lens_kv.push_back(s.kv_len);
    }
    b.max_blocks = std::max(b.max_blocks, 1);
    const int num_blocks = total_blocks + 3;   // a few blocks nobody owns
    std::vector<int32_t> physical(num_blocks);
    std::iota(physical.begin(), physical.end(), 0);
    std::shuffle(physical.begin(), physical.end(), rng);
    b.tables.assign(c.seqs.size() * b.max_blocks, -1);
    int next = 0;
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        const int nb = (c.seqs[s].kv_len + c.block_size - 1) / c.block_size;
        for (int i = 0; i < nb; ++i) b.tables[s * b.max_blocks + i] = physical[next++];
    }
    const size_t cache_elems = size_t{1} * num_blocks * c.block_size * c.num_kv_heads * c.head_dim;
    b.k_codes = random_cache_codes(rng, cache_elems, c.value_range, c.k_scale);
    b.v_codes = random_cache_codes(rng, cache_elems, c.value_range, c.v_scale);
    b.q_bits = to_bf16(random_floats(rng, size_t{1} * b.cu_q.back() * c.num_heads * c.head_dim, -2.0f, 2.0f));
    return b;
}

// The test data covers what it claims: subnormal codes always, saturated ones where the range passes
// 448 * scale, and no NaN code.
void expect_code_coverage(const AttnCase& c, const Fp8Batch& b) {
    for (const auto& [codes, scale] : {std::pair{&b.k_codes, c.k_scale}, std::pair{&b.v_codes, c.v_scale}}) {
        EXPECT_EQ(std::count_if(codes->begin(), codes->end(), is_nan_code), 0);
        EXPECT_GT(std::count_if(codes->begin(), codes->end(), is_subnormal_code), 0);
        if (c.value_range > kFp8E4M3Max * scale) {
            EXPECT_GT(std::count_if(codes->begin(), codes->end(), is_saturated_code), 0);
        }
    }
}

float softmax_scale(int head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

std::vector<float> cpu_reference(const AttnCase& c, const Fp8Batch& b) {
    const std::vector<float> k = dequantize(b.k_codes, c.k_scale), v = dequantize(b.v_codes, c.v_scale);
    const std::vector<float> q = from_bf16(b.q_bits);
    const int64_t row = int64_t{c.num_heads} * c.head_dim;
    std::vector<float> ref(q.size());
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        const Seq& sp = c.seqs[s];
        if (sp.num_new == 0) continue;
        const int64_t off = int64_t{b.cu_q[s]} * row;
        cpu::paged_attention(q.data() + off, row, sp.num_new, sp.kv_len - sp.num_new, k.data(), v.data(),
                             int64_t{c.num_kv_heads} * c.head_dim, b.tables.data() + s * b.max_blocks, c.block_size,
                             c.num_heads, c.num_kv_heads, c.head_dim, softmax_scale(c.head_dim), ref.data() + off,
                             pool());
    }
    return ref;
}

// The batch's metadata on the device. num_single: AttentionMetadata::num_single_token_seqs.
struct DeviceMeta {
    DeviceBuffer cu_q, lens_kv, tables;
    AttentionMetadata meta;
};

DeviceMeta upload_meta(const Fp8Batch& b, int num_single) {
    DeviceMeta m{upload(b.cu_q), upload(b.lens_kv), upload(b.tables), {}};
    m.meta.cu_seqlens_q = m.cu_q.as<int32_t>();
    m.meta.seq_lens_kv = m.lens_kv.as<int32_t>();
    m.meta.block_tables = m.tables.as<int32_t>();
    m.meta.num_seqs = static_cast<int>(b.lens_kv.size());
    m.meta.num_tokens = b.cu_q.back();
    m.meta.max_blocks_per_seq = b.max_blocks;
    m.meta.max_seq_len_q = b.max_q;
    m.meta.max_seq_len_kv = b.max_kv;
    m.meta.num_single_token_seqs = num_single;
    return m;
}

// kFp8: paged_attention_fp8 on the codes. kBf16: paged_attention on a bf16 cache holding code * scale
// (exact only at unit scales, the one use).
enum class CacheKind { kFp8, kBf16 };

// Runs one batch on the device; returns the output as floats. One guard row past the output must keep
// its poison.
std::vector<float> run_device(const AttnCase& c, const Fp8Batch& b, int num_single, CacheKind kind) {
    const bool fp8 = kind == CacheKind::kFp8;
    DeviceBuffer d_k = fp8 ? upload(b.k_codes) : upload(to_bf16(dequantize(b.k_codes, c.k_scale)));
    DeviceBuffer d_v = fp8 ? upload(b.v_codes) : upload(to_bf16(dequantize(b.v_codes, c.v_scale)));
    DeviceBuffer d_q = upload(b.q_bits);
    const DeviceMeta m = upload_meta(b, num_single);
    const AttentionMetadata& meta = m.meta;
    const size_t row = size_t{1} * c.num_heads * c.head_dim, n = b.q_bits.size();
    DeviceBuffer d_out = poisoned((n + row) * 2);
    const size_t ws_bytes = attention_workspace_bytes(meta.num_tokens, c.num_heads, c.head_dim, b.max_kv);
    DeviceBuffer d_ws = poisoned(std::max<size_t>(ws_bytes, 16));
    const float scale = softmax_scale(c.head_dim);
    const cudaError_t err =
        fp8 ? paged_attention_fp8(d_q.as<bf16>(), d_k.as<uint8_t>(), d_v.as<uint8_t>(), meta, c.num_heads,
                                  c.num_kv_heads, c.head_dim, c.block_size, scale, c.k_scale, c.v_scale,
                                  d_out.as<bf16>(), d_ws.data(), ws_bytes, nullptr)
            : paged_attention(d_q.as<bf16>(), d_k.as<bf16>(), d_v.as<bf16>(), meta, c.num_heads, c.num_kv_heads,
                              c.head_dim, c.block_size, scale, d_out.as<bf16>(), d_ws.data(), ws_bytes, nullptr);
    EXPECT_EQ(err, cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> bits = download<uint16_t>(d_out, n + row);
    EXPECT_EQ(std::count_if(bits.begin() + n, bits.end(), [](uint16_t x) { return x != kPoisonBf16; }), 0)
        << "guard row written";
    return from_bf16(std::vector<uint16_t>(bits.begin(), bits.begin() + n));
}

// relative_error of each sequence's rows below `bound`, and no NaN anywhere.
void expect_close(const AttnCase& c, const Fp8Batch& b, const std::vector<float>& out, const std::vector<float>& ref,
                  double bound) {
    EXPECT_EQ(count_nan(out), 0u);
    const size_t row = size_t{1} * c.num_heads * c.head_dim;
    for (size_t s = 0; s < c.seqs.size(); ++s) {
        if (c.seqs[s].num_new == 0) continue;
        const auto begin = static_cast<std::ptrdiff_t>(b.cu_q[s] * row);
        const auto end = static_cast<std::ptrdiff_t>(b.cu_q[s + 1] * row);
        const double err = relative_error(std::vector<float>(out.begin() + begin, out.begin() + end),
                                          std::vector<float>(ref.begin() + begin, ref.begin() + end));
        EXPECT_LT(err, bound) << "sequence " << s << " (" << c.seqs[s].num_new << " new, " << c.seqs[s].kv_len
                              << " kv)";
    }
}

::testing::Message describe(const AttnCase& c, uint32_t seed) {
    return ::testing::Message() << "heads " << c.num_heads << "/" << c.num_kv_heads << " d " << c.head_dim << " bs "
                                << c.block_size << " seqs " << c.seqs.size() << " k_scale " << c.k_scale
                                << " v_scale " << c.v_scale << " range " << c.value_range << " seed " << seed;
}

// A batch with several new tokens somewhere runs twice: everything in the prefill kernel, and its
// one-token sequences in the decode kernel.
std::vector<int> routings(const Fp8Batch& b) {
    if (b.max_q > 1 && b.num_single > 0) return {0, b.num_single};
    return {0};
}

void check_against_cpu(const AttnCase& c) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(describe(c, seed));
    std::mt19937 rng(seed);
    const Fp8Batch b = make_batch(c, rng);
    expect_code_coverage(c, b);
    const std::vector<float> ref = cpu_reference(c, b);
    for (const int routed : routings(b)) {
        SCOPED_TRACE(::testing::Message() << "one-token sequences in the decode kernel: " << routed);
        expect_close(c, b, run_device(c, b, routed, CacheKind::kFp8), ref, 1e-2);
    }
}

class Fp8KvAttentionTest : public CudaTest {};

TEST_F(Fp8KvAttentionTest, DecodeMatchesCpuOnTheDequantizedCache) {
    // GQA 1:1, 4:1, 8:1 and Llama-3's 32/8; the 5000-key sequences take the split-KV path.
    for (int d : {64, 80, 96, 128, 256}) {
        for (auto [h, kvh] : {std::pair{8, 8}, std::pair{16, 4}, std::pair{16, 2}, std::pair{32, 8}})
            check_against_cpu({h, kvh, d, 16, {{1, 1}, {1, 17}, {1, 300}, {1, 1000}}});
        check_against_cpu({32, 8, d, 16, {{1, 5000}, {1, 17}, {1, 4097}}});
        check_against_cpu({8, 1, d, 7, {{1, 1}, {1, 300}, {1, 4500}}});
    }
}

TEST_F(Fp8KvAttentionTest, PrefillMatchesCpuOnTheDequantizedCache) {
    for (int d : {64, 80, 96, 128, 256}) {
        check_against_cpu({8, 2, d, 16, {{17, 17}, {111, 300}, {7, 7}}});
        check_against_cpu({32, 8, d, 32, {{300, 1000}, {19, 4500}}});
        check_against_cpu({8, 8, d, 7, {{65, 65}, {1, 1}, {33, 1000}}});
    }
}

TEST_F(Fp8KvAttentionTest, MixedBatchMatchesCpuOnTheDequantizedCache) {
    check_against_cpu({32, 8, 128, 16, {{1, 500}, {37, 37}, {1, 1}, {0, 50}, {19, 1000}, {1, 5000}}});
    check_against_cpu({16, 2, 64, 7, {{1, 17}, {65, 65}, {1, 300}, {2, 2}}});
    for (int d : {80, 96, 256}) check_against_cpu({8, 2, d, 16, {{1, 17}, {33, 33}, {1, 2000}}});
}

TEST_F(Fp8KvAttentionTest, UnitAndSaturatingScales) {
    for (int d : {64, 128}) {
        // Scale 1: the codes are the values.
        check_against_cpu({32, 8, d, 16, {{1, 17}, {1, 1000}, {19, 300}}, 1.0f, 1.0f, 2.0f});
        // Scale 0.01 over values up to 6: a quarter of the codes saturate at +-448.
        check_against_cpu({16, 4, d, 16, {{1, 300}, {1, 5000}, {7, 1000}}, 0.01f, 0.01f, 6.0f});
    }
}

TEST_F(Fp8KvAttentionTest, UnitScalesComputeWhatTheBf16PathComputes) {
    const AttnCase cases[] = {
        {32, 8, 128, 16, {{1, 17}, {1, 5000}, {1, 300}}, 1.0f, 1.0f, 2.0f},
        {8, 2, 64, 7, {{1, 1}, {19, 300}, {111, 111}}, 1.0f, 1.0f, 8.0f},
        {16, 16, 128, 32, {{1, 4500}, {64, 1000}}, 1.0f, 1.0f, 300.0f},
    };
    for (const AttnCase& c : cases) {
        const uint32_t seed = fresh_seed();
        SCOPED_TRACE(describe(c, seed));
        std::mt19937 rng(seed);
        const Fp8Batch b = make_batch(c, rng);
        for (const int routed : routings(b)) {
            SCOPED_TRACE(::testing::Message() << "one-token sequences in the decode kernel: " << routed);
            const std::vector<float> bf16_out = run_device(c, b, routed, CacheKind::kBf16);
            expect_close(c, b, run_device(c, b, routed, CacheKind::kFp8), bf16_out, 2e-3);
        }
    }
}

TEST_F(Fp8KvAttentionTest, RefusesBadScalesHeadDimsAndMisalignedCaches) {
    const AttnCase c{8, 2, 128, 16, {{1, 20}}};
    std::mt19937 rng(fresh_seed());
    Fp8Batch b = make_batch(c, rng);
    b.k_codes.resize(b.k_codes.size() + 16);   // room for the shifted pointers
    b.v_codes.resize(b.v_codes.size() + 16);
    DeviceBuffer d_q = upload(b.q_bits), d_k = upload(b.k_codes), d_v = upload(b.v_codes);
    const DeviceMeta m = upload_meta(b, 0);
    const AttentionMetadata& meta = m.meta;
    const size_t n = b.q_bits.size();
    DeviceBuffer d_out = poisoned(n * 2);
    const size_t ws_bytes = attention_workspace_bytes(1, c.num_heads, c.head_dim, b.max_kv);
    DeviceBuffer d_ws(std::max<size_t>(ws_bytes, 16));
    const auto call = [&](float k_scale, float v_scale, int head_dim = 128, int k_shift = 0, int v_shift = 0) {
        return paged_attention_fp8(d_q.as<bf16>(), d_k.as<uint8_t>() + k_shift, d_v.as<uint8_t>() + v_shift, meta,
                                   c.num_heads, c.num_kv_heads, head_dim, c.block_size, softmax_scale(head_dim),
                                   k_scale, v_scale, d_out.as<bf16>(), d_ws.data(), ws_bytes, nullptr);
    };
    for (const float bad : {0.0f, -1.0f, kNan, kInf, -kInf}) {
        EXPECT_EQ(call(bad, 1.9f), cudaErrorInvalidValue) << "k_scale " << bad;
        EXPECT_EQ(call(0.37f, bad), cudaErrorInvalidValue) << "v_scale " << bad;
    }
    EXPECT_EQ(call(0.37f, 256.0f), cudaErrorInvalidValue) << "v_scale 256";
    EXPECT_EQ(call(0.37f, 1.9f, 112), cudaErrorInvalidValue) << "head_dim 112";
    for (const int shift : {1, 8}) {
        EXPECT_EQ(call(0.37f, 1.9f, 128, shift, 0), cudaErrorMisalignedAddress) << "k_cache + " << shift;
        EXPECT_EQ(call(0.37f, 1.9f, 128, 0, shift), cudaErrorMisalignedAddress) << "v_cache + " << shift;
    }
    // Nothing ran: no error is pending and the output keeps its poison.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    const std::vector<uint16_t> untouched = download<uint16_t>(d_out, n);
    EXPECT_EQ(std::count(untouched.begin(), untouched.end(), kPoisonBf16), static_cast<std::ptrdiff_t>(n));
    // The same call with good arguments runs.
    ASSERT_EQ(call(0.37f, 1.9f), cudaSuccess);
    EXPECT_EQ(count_nan(from_bf16(download<uint16_t>(d_out, n))), 0u);
}

// ---------------------------------------------------------------- qkv_rope_kv_write with kv_fp8

struct RopeCase {
    int num_tokens, num_heads, num_kv_heads, head_dim;
    bool bias, qk_norm;
    float k_scale, v_scale;
    bool saturates = false;   // some of k / k_scale and v / v_scale must pass 448
};

constexpr int kRopeBlockSize = 16;

// Host inputs of one case; every fifth token is padding (slot -1), the rest scrambled slots of a cache
// with room to spare.
struct RopeInputs {
    std::vector<uint16_t> qkv, bias, q_norm, k_norm;
    std::vector<int32_t> positions, slots;
    std::vector<float> inv_freq;
    int num_slots = 0;
};

RopeInputs make_rope_inputs(const RopeCase& c, std::mt19937& rng) {
    const int d = c.head_dim, width = (c.num_heads + 2 * c.num_kv_heads) * d;
    RopeInputs in;
    in.qkv = to_bf16(random_floats(rng, size_t{1} * c.num_tokens * width, -3.0f, 3.0f));
    in.bias = to_bf16(random_floats(rng, width, -1.0f, 1.0f));
    in.q_norm = to_bf16(random_floats(rng, d, 0.5f, 1.5f));
    in.k_norm = to_bf16(random_floats(rng, d, 0.5f, 1.5f));
    for (int t = 0; t < c.num_tokens; ++t) in.positions.push_back(static_cast<int32_t>(rng() % 8192));
    for (int j = 0; j < d / 2; ++j) in.inv_freq.push_back(std::pow(1e6f, -2.0f * j / d));
    in.num_slots = ((c.num_tokens * 2) / kRopeBlockSize + 2) * kRopeBlockSize;
    std::vector<int32_t> all_slots(in.num_slots);
    std::iota(all_slots.begin(), all_slots.end(), 0);
    std::shuffle(all_slots.begin(), all_slots.end(), rng);
    in.slots.assign(all_slots.begin(), all_slots.begin() + c.num_tokens);
    for (int t = 3; t < c.num_tokens; t += 5) in.slots[t] = -1;
    return in;
}

// The op in fp32 through the CPU ops (as rope_kv_test.cpp): q [T, H, D], k and v [T, KVH, D].
struct RopeReference {
    std::vector<float> q, k, v;
};

RopeReference rope_reference(const RopeCase& c, const RopeInputs& in) {
    const int d = c.head_dim, width = (c.num_heads + 2 * c.num_kv_heads) * d;
    RopeReference ref;
    for (int t = 0; t < c.num_tokens; ++t) {
        for (int col = 0; col < width; ++col) {
            float x = bf16_to_f32(in.qkv[size_t{1} * t * width + col]);
            if (c.bias) x += bf16_to_f32(in.bias[col]);
            const int head = col / d;
            auto& dst = head < c.num_heads ? ref.q : head < c.num_heads + c.num_kv_heads ? ref.k : ref.v;
            dst.push_back(x);
        }
    }
    if (c.qk_norm) {
        cpu::rms_norm(ref.q.data(), int64_t{c.num_tokens} * c.num_heads, d, bf16_weight(in.q_norm, {d}), 1e-6f,
                      ref.q.data());
        cpu::rms_norm(ref.k.data(), int64_t{c.num_tokens} * c.num_kv_heads, d, bf16_weight(in.k_norm, {d}), 1e-6f,
                      ref.k.data());
    }
    cpu::rope(ref.q.data(), c.num_tokens, int64_t{c.num_heads} * d, c.num_heads, d, in.positions.data(),
              in.inv_freq.data());
    cpu::rope(ref.k.data(), c.num_tokens, int64_t{c.num_kv_heads} * d, c.num_kv_heads, d, in.positions.data(),
              in.inv_freq.data());
    return ref;
}

// Device copies of one case's inputs, and poisoned outputs (caches of one byte per element).
struct RopeDevice {
    DeviceBuffer qkv, bias, q_norm, k_norm, positions, inv_freq, slots, q_out, k_cache, v_cache;
};

RopeDevice upload_rope(const RopeCase& c, const RopeInputs& in) {
    const size_t cache_bytes = size_t{1} * in.num_slots * c.num_kv_heads * c.head_dim;
    return {upload(in.qkv), upload(in.bias), upload(in.q_norm), upload(in.k_norm), upload(in.positions),
            upload(in.inv_freq), upload(in.slots), poisoned(size_t{2} * c.num_tokens * c.num_heads * c.head_dim),
            poisoned(cache_bytes), poisoned(cache_bytes)};
}

QkvRopeParams fp8_params(const RopeCase& c, const RopeDevice& dev) {
    QkvRopeParams p{};
    p.qkv = dev.qkv.as<bf16>();
    p.bias = c.bias ? dev.bias.as<bf16>() : nullptr;
    p.q_norm = c.qk_norm ? dev.q_norm.as<bf16>() : nullptr;
    p.k_norm = c.qk_norm ? dev.k_norm.as<bf16>() : nullptr;
    p.norm_eps = 1e-6f;
    p.positions = dev.positions.as<int32_t>();
    p.inv_freq = dev.inv_freq.as<float>();
    p.slot_mapping = dev.slots.as<int32_t>();
    p.num_tokens = c.num_tokens;
    p.num_heads = c.num_heads;
    p.num_kv_heads = c.num_kv_heads;
    p.head_dim = c.head_dim;
    p.q_out = dev.q_out.as<bf16>();
    p.k_cache = dev.k_cache.data();
    p.v_cache = dev.v_cache.data();
    p.kv_fp8 = true;
    p.k_scale = c.k_scale;
    p.v_scale = c.v_scale;
    return p;
}

// E4M3 codes in the order of their values, -0 just below +0 (so that a wrong sign of zero counts).
int code_rank(uint8_t c) { return (c & 0x80u) ? -2 * static_cast<int>(c & 0x7fu) - 1 : 2 * static_cast<int>(c); }

// Whether `got` is the code of x (the reference over the scale), or a neighbour where x lies within
// `window` of a rounding boundary: any code between those of x - window and x + window.
bool acceptable_code(uint8_t got, float x, float window) {
    if (is_nan_code(got)) return false;
    const int rank = code_rank(got);
    return code_rank(f32_to_fp8_e4m3(x - window)) <= rank && rank <= code_rank(f32_to_fp8_e4m3(x + window));
}

struct CodeCheck {
    size_t num_wrong = 0, num_saturated = 0, num_untouched_written = 0;
};

// The cache bytes of every mapped token against the codes of ref / scale; every other byte must keep its
// poison. The window is 1e-5 of the element's rotation pair (|(x_j, x_j+half)|, which rope preserves):
// fp32 rounding in the rotation is relative to the pair, not to an element that cancels.
CodeCheck check_codes(const RopeCase& c, const RopeInputs& in, const std::vector<float>& ref,
                      const std::vector<uint8_t>& cache, float scale) {
    const size_t d = c.head_dim, half = d / 2, row = c.num_kv_heads * d;
    CodeCheck out;
    std::vector<bool> written(in.num_slots, false);
    for (int t = 0; t < c.num_tokens; ++t) {
        if (in.slots[t] < 0) continue;
        written[in.slots[t]] = true;
        for (size_t i = 0; i < row; ++i) {
            const size_t head0 = i / d * d, j = i % d, partner = head0 + (j < half ? j + half : j - half);
            const float x = ref[t * row + i] / scale;
            const float window = 1e-5f * std::hypot(x, ref[t * row + partner] / scale);
            const uint8_t got = cache[in.slots[t] * row + i];
            out.num_wrong += acceptable_code(got, x, window) ? 0 : 1;
            out.num_saturated += is_saturated_code(f32_to_fp8_e4m3(x)) ? 1 : 0;
        }
    }
    for (int s = 0; s < in.num_slots; ++s)
        if (!written[s])
            for (size_t i = 0; i < row; ++i) out.num_untouched_written += cache[s * row + i] != kPoisonCode;
    return out;
}

class Fp8KvRopeTest : public CudaTest {};

TEST_F(Fp8KvRopeTest, CacheBytesAreTheCodesOfTheFp32Reference) {
    const RopeCase cases[] = {
        {1, 8, 2, 128, false, false, 0.5f, 0.25f},        {7, 8, 1, 64, true, false, 0.5f, 0.25f},
        {19, 4, 4, 128, false, true, 0.5f, 0.25f},        {111, 16, 2, 64, true, true, 0.5f, 0.25f},
        {989, 8, 2, 128, true, false, 0.37f, 1.9f},       {19, 14, 2, 64, false, true, 0.37f, 1.9f},
        {111, 8, 2, 128, true, true, 0.005f, 0.004f, true}, {33, 8, 8, 64, true, false, 0.005f, 0.004f, true},
    };
    for (const RopeCase& c : cases) {
        const uint32_t seed = fresh_seed();
        SCOPED_TRACE(::testing::Message() << "T " << c.num_tokens << " heads " << c.num_heads << "/"
                                          << c.num_kv_heads << " d " << c.head_dim << " bias " << c.bias << " norm "
                                          << c.qk_norm << " k_scale " << c.k_scale << " v_scale " << c.v_scale
                                          << " seed " << seed);
        std::mt19937 rng(seed);
        const RopeInputs in = make_rope_inputs(c, rng);
        const RopeReference ref = rope_reference(c, in);
        const RopeDevice dev = upload_rope(c, in);
        ASSERT_EQ(qkv_rope_kv_write(fp8_params(c, dev), nullptr), cudaSuccess);

        const std::vector<float> q_out = from_bf16(download<uint16_t>(dev.q_out, ref.q.size()));
        EXPECT_EQ(count_nan(q_out), 0u);
        EXPECT_LT(relative_error(q_out, ref.q), 4e-3);
        const size_t cache_bytes = size_t{1} * in.num_slots * c.num_kv_heads * c.head_dim;
        const CodeCheck k = check_codes(c, in, ref.k, download<uint8_t>(dev.k_cache, cache_bytes), c.k_scale);
        const CodeCheck v = check_codes(c, in, ref.v, download<uint8_t>(dev.v_cache, cache_bytes), c.v_scale);
        EXPECT_EQ(k.num_wrong, 0u) << "k codes";
        EXPECT_EQ(v.num_wrong, 0u) << "v codes";
        EXPECT_EQ(k.num_untouched_written + v.num_untouched_written, 0u) << "bytes of unmapped slots written";
        if (c.saturates) {
            EXPECT_GT(k.num_saturated * v.num_saturated, 0u) << "the case must saturate";
        }
    }
}

TEST_F(Fp8KvRopeTest, RefusesBadScalesAndOddCachePointers) {
    const RopeCase c{4, 8, 2, 64, true, false, 0.5f, 0.25f};
    std::mt19937 rng(fresh_seed());
    const RopeInputs in = make_rope_inputs(c, rng);
    const RopeDevice dev = upload_rope(c, in);
    const QkvRopeParams good = fp8_params(c, dev);
    for (const float bad : {0.0f, -1.0f, kNan, kInf}) {
        QkvRopeParams p = good;
        p.k_scale = bad;
        EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue) << "k_scale " << bad;
        p = good;
        p.v_scale = bad;
        EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue) << "v_scale " << bad;
    }
    QkvRopeParams odd = good;   // FP8 caches need 2-byte alignment
    odd.k_cache = dev.k_cache.as<uint8_t>() + 1;
    EXPECT_EQ(qkv_rope_kv_write(odd, nullptr), cudaErrorInvalidValue) << "k_cache + 1";
    const size_t cache_bytes = size_t{1} * in.num_slots * c.num_kv_heads * c.head_dim;
    const std::vector<uint8_t> k_cache = download<uint8_t>(dev.k_cache, cache_bytes);
    EXPECT_EQ(std::count(k_cache.begin(), k_cache.end(), kPoisonCode), static_cast<std::ptrdiff_t>(cache_bytes));
    EXPECT_EQ(qkv_rope_kv_write(good, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace hichat::cuda
