// qkv_rope_kv_write against the CPU ops: bias add, per-head rms_norm (Qwen3), rope, and the paged
// cache write through a scrambled slot mapping (with padding tokens, slot -1, that must write nothing).
#include <algorithm>
#include <numeric>

#include "backend/cpu/ops.h"
#include "backend/cuda/ops.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;

struct RopeCase {
    int num_tokens, num_heads, num_kv_heads, head_dim;
    bool bias, qk_norm;
};

// Host version of the op in fp32, through cpu::rms_norm and cpu::rope. Returns q [T, H, D] and
// k, v [T, KVH, D].
struct RopeReference {
    std::vector<float> q, k, v;
};

RopeReference reference(const RopeCase& c, const std::vector<float>& qkv, const std::vector<uint16_t>& bias,
                        const std::vector<uint16_t>& q_norm, const std::vector<uint16_t>& k_norm,
                        const std::vector<int32_t>& positions, const std::vector<float>& inv_freq) {
    const int d = c.head_dim;
    const int width = (c.num_heads + 2 * c.num_kv_heads) * d;
    RopeReference ref;
    for (int t = 0; t < c.num_tokens; ++t) {
        for (int col = 0; col < width; ++col) {
            float x = qkv[size_t{1} * t * width + col];
            if (c.bias) x += bf16_to_f32(bias[col]);
            const int head = col / d;
            auto& dst = head < c.num_heads ? ref.q : head < c.num_heads + c.num_kv_heads ? ref.k : ref.v;
            dst.push_back(x);
        }
    }
    if (c.qk_norm) {
        cpu::rms_norm(ref.q.data(), int64_t{c.num_tokens} * c.num_heads, d, bf16_weight(q_norm, {d}), 1e-6f,
                      ref.q.data());
        cpu::rms_norm(ref.k.data(), int64_t{c.num_tokens} * c.num_kv_heads, d, bf16_weight(k_norm, {d}), 1e-6f,
                      ref.k.data());
    }
    cpu::rope(ref.q.data(), c.num_tokens, int64_t{c.num_heads} * d, c.num_heads, d, positions.data(), inv_freq.data());
    cpu::rope(ref.k.data(), c.num_tokens, int64_t{c.num_kv_heads} * d, c.num_kv_heads, d, positions.data(),
              inv_freq.data());
    return ref;
}

// The op's parameters for case c over device buffers (the bias and the norms where c has them).
QkvRopeParams rope_params(const RopeCase& c, const DeviceBuffer& qkv, const DeviceBuffer& bias, const DeviceBuffer& q_norm,
                          const DeviceBuffer& k_norm, const DeviceBuffer& positions, const DeviceBuffer& inv_freq,
                          const DeviceBuffer& slots, DeviceBuffer& q, DeviceBuffer& k_cache, DeviceBuffer& v_cache) {
    QkvRopeParams p{};
    p.qkv = qkv.as<bf16>();
    p.bias = c.bias ? bias.as<bf16>() : nullptr;
    p.q_norm = c.qk_norm ? q_norm.as<bf16>() : nullptr;
    p.k_norm = c.qk_norm ? k_norm.as<bf16>() : nullptr;
    p.norm_eps = 1e-6f;
    p.positions = positions.as<int32_t>();
    p.inv_freq = inv_freq.as<float>();
    p.slot_mapping = slots.as<int32_t>();
    p.num_tokens = c.num_tokens;
    p.num_heads = c.num_heads;
    p.num_kv_heads = c.num_kv_heads;
    p.head_dim = c.head_dim;
    p.q_out = q.as<bf16>();
    p.k_cache = k_cache.data();
    p.v_cache = v_cache.data();
    return p;
}

class QkvRopeTest : public CudaTest {};

TEST_F(QkvRopeTest, MatchesCpuAndWritesOnlyMappedSlots) {
    const RopeCase cases[] = {
        {1, 8, 2, 128, false, false},  {7, 8, 1, 64, true, false},   {19, 4, 4, 128, false, true},
        {111, 16, 2, 64, true, true},  {989, 8, 2, 128, true, false}, {19, 14, 2, 64, false, true},
        {33, 8, 2, 80, true, false},   {17, 4, 1, 96, false, true},   {9, 8, 4, 256, true, true},
    };
    const int block_size = 16;
    for (const RopeCase& c : cases) {
        const uint32_t seed = fresh_seed();
        SCOPED_TRACE(::testing::Message() << "T " << c.num_tokens << " heads " << c.num_heads << "/"
                                          << c.num_kv_heads << " d " << c.head_dim << " bias " << c.bias
                                          << " norm " << c.qk_norm << " seed " << seed);
        std::mt19937 rng(seed);
        const int d = c.head_dim;
        const int width = (c.num_heads + 2 * c.num_kv_heads) * d;
        const auto qkv_bits = to_bf16(random_floats(rng, size_t{1} * c.num_tokens * width, -3.0f, 3.0f));
        const auto bias = to_bf16(random_floats(rng, width, -1.0f, 1.0f));
        const auto q_norm = to_bf16(random_floats(rng, d, 0.5f, 1.5f));
        const auto k_norm = to_bf16(random_floats(rng, d, 0.5f, 1.5f));
        std::vector<int32_t> positions(c.num_tokens);
        for (int32_t& p : positions) p = static_cast<int32_t>(rng() % 8192);
        std::vector<float> inv_freq(d / 2);
        for (int j = 0; j < d / 2; ++j) inv_freq[j] = std::pow(1e6f, -2.0f * j / d);

        // Scrambled slots in a cache with room to spare; every fifth token is padding (slot -1).
        const int num_blocks = (c.num_tokens * 2) / block_size + 2;
        std::vector<int32_t> all_slots(num_blocks * block_size);
        std::iota(all_slots.begin(), all_slots.end(), 0);
        std::shuffle(all_slots.begin(), all_slots.end(), rng);
        std::vector<int32_t> slots(all_slots.begin(), all_slots.begin() + c.num_tokens);
        for (int t = 3; t < c.num_tokens; t += 5) slots[t] = -1;

        const auto ref = reference(c, from_bf16(qkv_bits), bias, q_norm, k_norm, positions, inv_freq);
        const size_t cache_elems = size_t{1} * num_blocks * block_size * c.num_kv_heads * d;
        DeviceBuffer d_qkv = upload(qkv_bits), d_bias = upload(bias), d_qn = upload(q_norm), d_kn = upload(k_norm);
        DeviceBuffer d_pos = upload(positions), d_freq = upload(inv_freq), d_slots = upload(slots);
        DeviceBuffer d_q = poisoned(ref.q.size() * 2), d_k = poisoned(cache_elems * 2), d_v = poisoned(cache_elems * 2);
        const QkvRopeParams p = rope_params(c, d_qkv, d_bias, d_qn, d_kn, d_pos, d_freq, d_slots, d_q, d_k, d_v);
        ASSERT_EQ(qkv_rope_kv_write(p, nullptr), cudaSuccess);

        const auto q_out = from_bf16(download<uint16_t>(d_q, ref.q.size()));
        EXPECT_EQ(count_nan(q_out), 0u);
        EXPECT_LT(relative_error(q_out, ref.q), 4e-3);

        const auto k_cache = download<uint16_t>(d_k, cache_elems);
        const auto v_cache = download<uint16_t>(d_v, cache_elems);
        const size_t row = size_t{1} * c.num_kv_heads * d;   // one slot
        std::vector<float> k_got, v_got, k_want, v_want;
        std::vector<bool> slot_written(num_blocks * block_size, false);
        for (int t = 0; t < c.num_tokens; ++t) {
            if (slots[t] < 0) continue;
            slot_written[slots[t]] = true;
            for (size_t i = 0; i < row; ++i) {
                k_got.push_back(bf16_to_f32(k_cache[slots[t] * row + i]));
                v_got.push_back(bf16_to_f32(v_cache[slots[t] * row + i]));
                k_want.push_back(ref.k[t * row + i]);
                v_want.push_back(ref.v[t * row + i]);
            }
        }
        EXPECT_EQ(count_nan(k_got) + count_nan(v_got), 0u);
        EXPECT_LT(relative_error(k_got, k_want), 4e-3);
        EXPECT_LT(relative_error(v_got, v_want), 4e-3);   // v is only bias + rounding
        size_t num_touched = 0;
        for (size_t s = 0; s < slot_written.size(); ++s)
            if (!slot_written[s])
                for (size_t i = 0; i < row; ++i)
                    num_touched += (k_cache[s * row + i] != 0xffff) + (v_cache[s * row + i] != 0xffff);
        EXPECT_EQ(num_touched, 0u);
    }
}

// An FP8 projection's unit-scale product with row_scale / col_scale gives, bit for bit, what
// scale_fp8_product to bf16 followed by the unscaled kernel gives (q, k and v, bf16 and FP8 caches).
TEST_F(QkvRopeTest, ScalesOfAnFp8ProductAreAppliedAsScaleFp8ProductDoes) {
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    for (const bool kv_fp8 : {false, true}) {
        const RopeCase c{37, 8, 2, 128, true, true};
        const int d = c.head_dim, width = (c.num_heads + 2 * c.num_kv_heads) * d;
        // A unit-scale product of E4M3 codes: hundreds to thousands.
        const auto product = to_bf16(random_floats(rng, size_t{1} * c.num_tokens * width, -3000.0f, 3000.0f));
        const auto row_scale = random_floats(rng, c.num_tokens, 1e-4f, 1e-2f);
        const auto col_scale = random_floats(rng, width, 1e-4f, 1e-2f);
        const auto bias = to_bf16(random_floats(rng, width, -1.0f, 1.0f));
        const auto norm = to_bf16(random_floats(rng, d, 0.5f, 1.5f));
        std::vector<int32_t> positions(c.num_tokens), slots(c.num_tokens);
        for (int t = 0; t < c.num_tokens; ++t) {
            positions[t] = static_cast<int32_t>(rng() % 4096);
            slots[t] = t % 7 == 3 ? -1 : t;
        }
        std::vector<float> inv_freq(d / 2);
        for (int j = 0; j < d / 2; ++j) inv_freq[j] = std::pow(5e5f, -2.0f * j / d);
        DeviceBuffer d_product = upload(product), d_rows = upload(row_scale), d_cols = upload(col_scale);
        DeviceBuffer d_bias = upload(bias), d_norm = upload(norm), d_pos = upload(positions), d_freq = upload(inv_freq);
        DeviceBuffer d_slots = upload(slots), d_scaled = poisoned(product.size() * 2);
        ASSERT_EQ(scale_fp8_product(d_product.as<bf16>(), d_rows.as<float>(), d_cols.as<float>(), d_scaled.data(), false,
                                    false, c.num_tokens, width, nullptr),
                  cudaSuccess);
        const size_t q_elems = size_t{1} * c.num_tokens * c.num_heads * d;
        const size_t cache_bytes = size_t{1} * c.num_tokens * c.num_kv_heads * d * (kv_fp8 ? 1 : 2);
        std::vector<uint8_t> outputs[2][3];
        for (int fused = 0; fused < 2; ++fused) {
            DeviceBuffer d_q = poisoned(q_elems * 2), d_k = poisoned(cache_bytes), d_v = poisoned(cache_bytes);
            QkvRopeParams p = rope_params(c, fused ? d_product : d_scaled, d_bias, d_norm, d_norm, d_pos, d_freq, d_slots,
                                          d_q, d_k, d_v);
            p.kv_fp8 = kv_fp8;
            p.k_scale = 0.05f;
            p.v_scale = 0.02f;
            if (fused) {
                p.row_scale = d_rows.as<float>();
                p.col_scale = d_cols.as<float>();
            }
            ASSERT_EQ(qkv_rope_kv_write(p, nullptr), cudaSuccess);
            outputs[fused][0] = download<uint8_t>(d_q, q_elems * 2);
            outputs[fused][1] = download<uint8_t>(d_k, cache_bytes);
            outputs[fused][2] = download<uint8_t>(d_v, cache_bytes);
        }
        for (int i = 0; i < 3; ++i) EXPECT_EQ(outputs[1][i], outputs[0][i]) << "output " << i << " kv_fp8 " << kv_fp8;
        EXPECT_NE(std::count(outputs[1][0].begin(), outputs[1][0].end(), uint8_t{0xff}), static_cast<long>(q_elems * 2));
    }
}

TEST_F(QkvRopeTest, RejectsUnsupportedHeadDim) {
    QkvRopeParams p{};
    p.num_tokens = 1;
    p.num_heads = 1;
    p.num_kv_heads = 1;
    p.head_dim = 63;
    EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue);
    p.head_dim = 66;   // pairs go two at a time
    EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue);
    p.head_dim = 512;
    EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue);
    p.head_dim = 64;   // a row scale without column scales
    DeviceBuffer scales(64);
    p.row_scale = scales.as<float>();
    EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue);
    p.col_scale = scales.as<float>() + 1;   // column scales read two at a time: 8-byte aligned
    EXPECT_EQ(qkv_rope_kv_write(p, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda
