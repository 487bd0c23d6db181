// Row ops against the CPU backend or exact host loops: embedding, rms_norm, gather_rows, silu_mul,
// argmax_rows, add_bias_bf16. Awkward row counts and widths that take both the 16-byte and the
// scalar paths. Outputs are poisoned first; NaN left anywhere fails.
#include <algorithm>

#include "backend/cpu/ops.h"
#include "backend/cuda/ops.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;

constexpr int kRows[] = {1, 7, 19, 111, 989};

class SmallOpsTest : public CudaTest {};

TEST_F(SmallOpsTest, EmbeddingIsExactAndResolvesPreviousStepIds) {
    for (int hidden : {64, 100, 1024}) {
        for (int rows : kRows) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "hidden " << hidden << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            const int vocab = 1000;
            const auto table = to_bf16(random_floats(rng, size_t{1} * vocab * hidden, -3.0f, 3.0f));
            // Every third id is a placeholder -(j + 1) for prev_ids[j], the previous step's choice.
            std::vector<int32_t> ids(rows), prev_ids(7), resolved(rows);
            for (int32_t& id : prev_ids) id = static_cast<int32_t>(rng() % vocab);
            for (int i = 0; i < rows; ++i) {
                const int j = static_cast<int>(rng() % prev_ids.size());
                ids[i] = i % 3 == 2 ? -(j + 1) : static_cast<int32_t>(rng() % vocab);
                resolved[i] = ids[i] < 0 ? prev_ids[j] : ids[i];
            }
            std::vector<float> ref(size_t{1} * rows * hidden);
            cpu::embedding(resolved.data(), rows, bf16_weight(table, {vocab, hidden}), ref.data());

            DeviceBuffer d_ids = upload(ids), d_prev = upload(prev_ids), d_table = upload(table),
                         d_out = poisoned(ref.size() * 4);
            ASSERT_EQ(embedding(d_ids.as<int32_t>(), d_prev.as<int32_t>(), rows, d_table.as<bf16>(), hidden,
                                d_out.as<float>(), nullptr),
                      cudaSuccess);
            EXPECT_EQ(download<float>(d_out, ref.size()), ref);
        }
    }
}

TEST_F(SmallOpsTest, RmsNormMatchesCpu) {
    for (int dim : {64, 1000, 2050, 4096, 8192}) {
        for (int rows : kRows) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "dim " << dim << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            const auto x = random_floats(rng, size_t{1} * rows * dim, -4.0f, 4.0f);
            const auto w = to_bf16(random_floats(rng, dim, 0.5f, 1.5f));
            std::vector<float> ref(x.size());
            cpu::rms_norm(x.data(), rows, dim, bf16_weight(w, {dim}), 1e-6f, ref.data());

            DeviceBuffer d_x = upload(x), d_w = upload(w), d_out = poisoned(x.size() * 2);
            ASSERT_EQ(rms_norm(d_x.as<float>(), rows, dim, d_w.as<bf16>(), 1e-6f, d_out.as<bf16>(), nullptr),
                      cudaSuccess);
            const auto out = from_bf16(download<uint16_t>(d_out, x.size()));
            EXPECT_EQ(count_nan(out), 0u);
            EXPECT_LT(relative_error(out, ref), 4e-3);
            // Each element is the reference rounded to bf16, give or take one bf16 step.
            size_t num_far = 0;
            for (size_t i = 0; i < out.size(); ++i)
                num_far += std::fabs(out[i] - ref[i]) > std::fabs(ref[i]) * (1.0f / 128) + 1e-6f ? 1 : 0;
            EXPECT_EQ(num_far, 0u);
        }
    }
}

TEST_F(SmallOpsTest, GatherRowsIsExact) {
    for (int dim : {4, 30, 896}) {
        for (int rows : kRows) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "dim " << dim << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            const int num_src = rows + 13;
            const auto x = random_floats(rng, size_t{1} * num_src * dim);
            std::vector<int32_t> idx(rows);
            for (int32_t& i : idx) i = static_cast<int32_t>(rng() % num_src);
            std::vector<float> ref;
            for (int32_t i : idx) ref.insert(ref.end(), x.begin() + int64_t{i} * dim, x.begin() + int64_t{i + 1} * dim);

            DeviceBuffer d_x = upload(x), d_idx = upload(idx), d_out = poisoned(ref.size() * 4);
            ASSERT_EQ(gather_rows(d_x.as<float>(), d_idx.as<int32_t>(), rows, dim, d_out.as<float>(), nullptr),
                      cudaSuccess);
            EXPECT_EQ(download<float>(d_out, ref.size()), ref);
        }
    }
}

TEST_F(SmallOpsTest, SiluMulMatchesCpu) {
    for (int inter : {8, 100, 1376, 4864}) {
        for (int rows : kRows) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "intermediate " << inter << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            const auto gate_up = to_bf16(random_floats(rng, size_t{2} * rows * inter, -6.0f, 6.0f));
            const auto gu = from_bf16(gate_up);
            std::vector<float> gate, up;
            for (int r = 0; r < rows; ++r) {
                const auto row = gu.begin() + int64_t{2} * r * inter;
                gate.insert(gate.end(), row, row + inter);
                up.insert(up.end(), row + inter, row + 2 * inter);
            }
            std::vector<float> ref(gate.size());
            cpu::silu_mul(gate.data(), up.data(), rows, inter, ref.data());

            DeviceBuffer d_in = upload(gate_up), d_out = poisoned(ref.size() * 2);
            ASSERT_EQ(silu_mul(d_in.as<bf16>(), rows, inter, d_out.as<bf16>(), nullptr), cudaSuccess);
            const auto out = from_bf16(download<uint16_t>(d_out, ref.size()));
            EXPECT_EQ(count_nan(out), 0u);
            EXPECT_LT(relative_error(out, ref), 4e-3);
        }
    }
}

TEST_F(SmallOpsTest, ArgmaxTakesLowestIndexOfTheMax) {
    for (int vocab : {1000, 50257, 151936}) {
        for (int rows : {1, 7, 19, 111}) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "vocab " << vocab << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            auto logits = random_floats(rng, size_t{1} * rows * vocab, -20.0f, 20.0f);
            for (int r = 0; r < rows; ++r) {
                float* row = logits.data() + int64_t{r} * vocab;
                const int hot = static_cast<int>(rng() % vocab);
                row[hot] = 25.0f + static_cast<float>(r % 3);
                if (r % 2 == 0) row[static_cast<int>(rng() % vocab)] = row[hot];    // a tie: lowest index wins
                if (r % 3 == 0) row[static_cast<int>(rng() % vocab)] = NAN;         // NaN never wins
            }
            std::vector<int32_t> ref(rows);
            for (int r = 0; r < rows; ++r) {
                const float* row = logits.data() + int64_t{r} * vocab;
                int best = 0;
                for (int i = 1; i < vocab; ++i)
                    if (row[i] > row[best] || std::isnan(row[best])) best = i;
                ref[r] = best;
            }
            DeviceBuffer d_logits = upload(logits), d_out = poisoned(rows * 4);
            ASSERT_EQ(argmax_rows(d_logits.as<float>(), rows, vocab, d_out.as<int32_t>(), nullptr), cudaSuccess);
            EXPECT_EQ(download<int32_t>(d_out, rows), ref);
        }
    }
}

TEST_F(SmallOpsTest, AddBiasIsExactBf16Rounding) {
    for (int cols : {3, 64, 896}) {
        for (int rows : kRows) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "cols " << cols << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            const auto x = to_bf16(random_floats(rng, size_t{1} * rows * cols, -2.0f, 2.0f));
            const auto bias = to_bf16(random_floats(rng, cols, -2.0f, 2.0f));
            std::vector<uint16_t> ref(x.size());
            for (size_t i = 0; i < x.size(); ++i)
                ref[i] = f32_to_bf16(bf16_to_f32(x[i]) + bf16_to_f32(bias[i % cols]));
            DeviceBuffer d_x = upload(x), d_bias = upload(bias);
            ASSERT_EQ(add_bias_bf16(d_x.as<bf16>(), d_bias.as<bf16>(), rows, cols, nullptr), cudaSuccess);
            EXPECT_EQ(download<uint16_t>(d_x, x.size()), ref);
        }
    }
}

TEST_F(SmallOpsTest, EmptyBatchesAreNoOpsAndBadSizesAreErrors) {
    EXPECT_EQ(rms_norm(nullptr, 0, 64, nullptr, 1e-6f, nullptr, nullptr), cudaSuccess);
    EXPECT_EQ(silu_mul(nullptr, 0, 64, nullptr, nullptr), cudaSuccess);
    EXPECT_EQ(argmax_rows(nullptr, 0, 10, nullptr, nullptr), cudaSuccess);
    EXPECT_EQ(rms_norm(nullptr, -1, 64, nullptr, 1e-6f, nullptr, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(argmax_rows(nullptr, 3, 0, nullptr, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda
