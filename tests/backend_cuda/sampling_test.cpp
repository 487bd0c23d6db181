// sample_rows against a CPU reference written here: probabilities as the op defines them, sorted, then
// top-k, top-p and min-p (ties at a threshold kept), then the inverse CDF in token-index order.
//
// The device's expf may differ from the host's by a couple of ulps and it sums fixed-point masses, so
// a decision that lies within rounding distance of a boundary is "fragile": a filter threshold within
// kRelTol of a neighbouring token, or a pick target within the tolerance of a cumulative boundary.
// Robust cases must match the reference exactly; fragile picks must still land on a candidate whose
// cumulative interval holds the target within the tolerance; fragile filters are counted and must
// stay rare.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "backend/cuda/ops.h"
#include "cuda_test_util.h"

namespace hichat::cuda {
namespace {

using namespace testing;

constexpr float kMinProb = 0x1p-40f;    // the op's floor: smaller p never count
constexpr double kRelTol = 5e-7;        // device expf (2 ulp) vs host expf (1 ulp), relative
constexpr float kLastUnit = 1.0f - 0x1p-24f;
constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- reference --------------------------------------------------------------------------------

struct CandidateSet {
    bool greedy = false;                // temperature 0 or nothing above -inf: `token` is the answer
    int32_t token = 0;
    std::vector<float> probs;           // [vocab] p as the op defines it (0 below kMinProb)
    std::vector<int32_t> candidates;    // token ids in index order
    std::vector<double> cum_after;      // [candidates] cumulative mass through each candidate
    double total = 0.0, tol = 0.0;      // candidate mass; pick tolerance
    bool fragile = false;               // some filter threshold is within rounding of a token
};

struct RefPick {
    int32_t token;
    bool fragile;
};

int32_t reference_argmax(const float* logits, int vocab) {
    int32_t best = -1;
    for (int32_t i = 0; i < vocab; ++i)
        if (logits[i] > -kInf && (best < 0 || logits[i] > logits[best])) best = i;
    return best;
}

// Tokens a and b are tied on the host but may not be on the device (or the reverse).
bool near_tie(const CandidateSet& c, const float* logits, int32_t a, int32_t b) {
    if (logits[a] == logits[b]) return false;   // equal logits give equal p everywhere
    return std::abs(double{c.probs[a]} - c.probs[b]) <= kRelTol * std::max(c.probs[a], c.probs[b]);
}

// Threshold of the k largest p (sorted: ids by p descending); marks a near tie at the boundary.
float top_k_threshold(CandidateSet& c, const float* logits, const std::vector<int32_t>& sorted, int top_k) {
    const auto k = static_cast<size_t>(top_k);
    if (near_tie(c, logits, sorted[k - 1], sorted[k])) c.fragile = true;
    return c.probs[sorted[k - 1]];
}

// Threshold of the smallest prefix of `sorted[0, kept)` whose mass reaches top_p of the prefix's mass.
float top_p_threshold(CandidateSet& c, const float* logits, const std::vector<int32_t>& sorted, size_t kept,
                      float top_p) {
    double mass = 0.0;
    for (size_t j = 0; j < kept; ++j) mass += c.probs[sorted[j]];
    const double need = std::max(0.0f, top_p) * mass, tol = kRelTol * mass + kept * double{kMinProb};
    double cum = 0.0;
    size_t j = 0;
    while (j < kept) {
        cum += c.probs[sorted[j++]];
        if (cum >= need) break;
    }
    // Fragile when rounding could make the device keep one token fewer (j - 1 tokens reach the need)
    // or one more (j tokens fall short of it).
    const double before = cum - c.probs[sorted[j - 1]];
    if ((j > 1 && need - before <= tol) || (j < kept && cum - need <= tol)) c.fragile = true;
    if (j < kept && near_tie(c, logits, sorted[j - 1], sorted[j])) c.fragile = true;
    return c.probs[sorted[j - 1]];
}

CandidateSet reference_candidates(const float* logits, int vocab, const SampleRowParams& sp) {
    CandidateSet c;
    const int32_t best = reference_argmax(logits, vocab);
    if (best < 0 || !(sp.temperature > 0.0f)) {
        c.greedy = true;
        c.token = std::max(best, 0);
        return c;
    }
    const float max_logit = logits[best], inv_t = 1.0f / sp.temperature;
    c.probs.assign(static_cast<size_t>(vocab), 0.0f);
    std::vector<int32_t> sorted;
    for (int32_t i = 0; i < vocab; ++i) {
        const float l = logits[i];
        float p = !(l > -kInf) ? 0.0f : l == max_logit ? 1.0f : std::fmin(std::exp((l - max_logit) * inv_t), 1.0f);
        if (p < kMinProb) p = 0.0f;
        c.probs[i] = p;
        if (p > 0.0f) sorted.push_back(i);
    }
    std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
        return c.probs[a] > c.probs[b] || (c.probs[a] == c.probs[b] && a < b);
    });
    float threshold = kMinProb;
    if (sp.top_k > 0 && static_cast<size_t>(sp.top_k) < sorted.size())
        threshold = top_k_threshold(c, logits, sorted, sp.top_k);
    size_t kept = 0;
    while (kept < sorted.size() && c.probs[sorted[kept]] >= threshold) ++kept;
    if (sp.top_p < 1.0f) threshold = std::max(threshold, top_p_threshold(c, logits, sorted, kept, sp.top_p));
    if (sp.min_p > 0.0f) {
        const float min_p = std::min(sp.min_p, 1.0f);
        threshold = std::max(threshold, min_p);
        for (int32_t i : sorted)
            if (logits[i] != max_logit && std::abs(double{c.probs[i]} - min_p) <= kRelTol * min_p) c.fragile = true;
    }
    for (int32_t i = 0; i < vocab; ++i) {
        if (c.probs[i] > 0.0f && c.probs[i] >= threshold) {
            c.candidates.push_back(i);
            c.total += c.probs[i];
            c.cum_after.push_back(c.total);
        }
    }
    c.tol = kRelTol * c.total + vocab * double{kMinProb};
    return c;
}

RefPick reference_pick(const CandidateSet& c, float u) {
    if (c.greedy) return {c.token, false};
    const double target = std::max(0.0f, u) * c.total;
    size_t i = std::upper_bound(c.cum_after.begin(), c.cum_after.end(), target) - c.cum_after.begin();
    i = std::min(i, c.candidates.size() - 1);
    const double before = i > 0 ? c.cum_after[i - 1] : 0.0;
    const bool fragile = (i > 0 && target - before <= c.tol) ||
                         (i + 1 < c.candidates.size() && c.cum_after[i] - target <= c.tol);
    return {c.candidates[i], fragile};
}

// ---- checking ---------------------------------------------------------------------------------

struct Tally {
    int exact = 0, fragile_pick = 0, fragile_filter = 0;
};

// Checks one device answer against the reference.
void check_pick(const CandidateSet& c, float u, int32_t got, Tally& tally) {
    const RefPick ref = reference_pick(c, u);
    if (c.greedy || (!c.fragile && !ref.fragile)) {
        EXPECT_EQ(got, ref.token) << "u " << u;
        ++tally.exact;
        return;
    }
    ASSERT_GE(got, 0);
    ASSERT_LT(static_cast<size_t>(got), c.probs.size());
    EXPECT_GT(c.probs[got], 0.0f) << "picked a token with no mass: " << got;
    if (c.fragile) {
        ++tally.fragile_filter;
        return;
    }
    ++tally.fragile_pick;
    const auto it = std::lower_bound(c.candidates.begin(), c.candidates.end(), got);
    ASSERT_TRUE(it != c.candidates.end() && *it == got) << "not a candidate: " << got;
    const size_t i = it - c.candidates.begin();
    const double target = std::max(0.0f, u) * c.total, before = i > 0 ? c.cum_after[i - 1] : 0.0;
    EXPECT_LE(before - c.tol, target) << "token " << got << " starts after the target";
    EXPECT_LT(target, c.cum_after[i] + c.tol) << "token " << got << " ends before the target";
}

std::vector<int32_t> run_sample_rows(const std::vector<float>& logits, int rows, int vocab,
                                     const std::vector<SampleRowParams>& params) {
    DeviceBuffer d_logits = upload(logits), d_params = upload(params), d_out = poisoned(size_t{4} * rows);
    const size_t ws_bytes = sample_rows_workspace_bytes(rows, vocab);
    DeviceBuffer d_ws = ws_bytes > 0 ? DeviceBuffer(ws_bytes) : DeviceBuffer();
    EXPECT_EQ(sample_rows(d_logits.as<float>(), rows, vocab, d_params.as<SampleRowParams>(), d_out.as<int32_t>(),
                          d_ws.data(), ws_bytes, nullptr),
              cudaSuccess);
    return download<int32_t>(d_out, static_cast<size_t>(rows));
}

// ---- inputs -----------------------------------------------------------------------------------

float random_unit(std::mt19937& rng) { return static_cast<float>(rng() >> 8) * 0x1p-24f; }

SampleRowParams random_params(std::mt19937& rng, int vocab) {
    static constexpr float kTemperatures[] = {0.0f, 0.25f, 0.7f, 1.0f, 1.0f, 1.5f, 4.0f};
    static constexpr float kTopPs[] = {1.0f, 1.0f, 0.999f, 0.95f, 0.9f, 0.5f, 0.1f, 1e-6f};
    static constexpr float kMinPs[] = {0.0f, 0.0f, 0.0f, 1e-4f, 0.01f, 0.05f, 0.3f, 1.0f};
    const int top_ks[] = {0, 0, 0, 1, 2, 7, 50, 1000, vocab - 1, vocab, vocab + 3};
    SampleRowParams p;
    p.temperature = kTemperatures[rng() % std::size(kTemperatures)];
    p.top_k = top_ks[rng() % std::size(top_ks)];
    p.top_p = kTopPs[rng() % std::size(kTopPs)];
    p.min_p = kMinPs[rng() % std::size(kMinPs)];
    const uint32_t special = rng() % 16;
    p.u = special == 0 ? 0.0f : special == 1 ? kLastUnit : random_unit(rng);
    return p;
}

// Row styles: smooth, peaked, quantised (many exact ties), flat; some carry NaN, -inf or +inf.
void fill_row(std::mt19937& rng, float* row, int vocab, int style) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int i = 0; i < vocab; ++i) {
        const float z = normal(rng);
        switch (style % 4) {
            case 0: row[i] = 2.0f * z; break;
            case 1: row[i] = 6.0f * z; break;
            case 2: row[i] = std::round(8.0f * z) / 4.0f; break;
            default: row[i] = 0.3f * z; break;
        }
    }
    if (style % 5 == 1)
        for (int n = 0; n < 3; ++n) row[rng() % vocab] = NAN;
    if (style % 3 == 1)
        for (int n = 0; n < 5; ++n) row[rng() % vocab] = -kInf;
}

// Rows of awkward content at fixed positions: all -inf/NaN, +inf maxima, a single finite token.
void add_special_rows(std::mt19937& rng, std::vector<float>& logits, int rows, int vocab) {
    if (rows > 3) {
        float* row = logits.data() + size_t{3} * vocab;
        for (int i = 0; i < vocab; ++i) row[i] = i % 2 ? -kInf : NAN;
    }
    if (rows > 5) {
        float* row = logits.data() + size_t{5} * vocab;
        row[rng() % vocab] = kInf;
        row[rng() % vocab] = kInf;
    }
    if (rows > 6) {
        float* row = logits.data() + size_t{6} * vocab;
        for (int i = 0; i < vocab; ++i) row[i] = -kInf;
        row[rng() % vocab] = -3.0f;
    }
}

class SampleRowsTest : public CudaTest {};

TEST_F(SampleRowsTest, MatchesReferenceOnRandomRows) {
    Tally tally;
    int num_sampled = 0;
    for (int vocab : {1, 5, 1000, 32000, 128256}) {
        for (int rows : {1, 7, 19, 111}) {
            const uint32_t seed = fresh_seed();
            SCOPED_TRACE(::testing::Message() << "vocab " << vocab << " rows " << rows << " seed " << seed);
            std::mt19937 rng(seed);
            std::vector<float> logits(size_t{1} * rows * vocab);
            std::vector<SampleRowParams> params(rows);
            for (int r = 0; r < rows; ++r) {
                fill_row(rng, logits.data() + size_t{1} * r * vocab, vocab, static_cast<int>(rng() % 60));
                params[r] = random_params(rng, vocab);
            }
            add_special_rows(rng, logits, rows, vocab);
            const auto got = run_sample_rows(logits, rows, vocab, params);
            for (int r = 0; r < rows; ++r) {
                SCOPED_TRACE(::testing::Message() << "row " << r << " T " << params[r].temperature << " top_k "
                                                  << params[r].top_k << " top_p " << params[r].top_p << " min_p "
                                                  << params[r].min_p);
                const auto c = reference_candidates(logits.data() + size_t{1} * r * vocab, vocab, params[r]);
                num_sampled += c.greedy ? 0 : 1;
                check_pick(c, params[r].u, got[r], tally);
            }
        }
    }
    std::printf("sampled rows %d: exact %d, fragile pick %d, fragile filter %d\n", num_sampled, tally.exact,
                tally.fragile_pick, tally.fragile_filter);
    EXPECT_LE(tally.fragile_filter * 10, num_sampled) << "filter thresholds near a token should be rare";
    EXPECT_LE(tally.fragile_pick * 2, num_sampled) << "most picks should compare exactly";
}

TEST_F(SampleRowsTest, TopKOneIsTheArgmax) {
    for (int vocab : {5, 1000, 128256}) {
        const int rows = 111;
        const uint32_t seed = fresh_seed();
        SCOPED_TRACE(::testing::Message() << "vocab " << vocab << " seed " << seed);
        std::mt19937 rng(seed);
        std::vector<float> logits(size_t{1} * rows * vocab);
        std::vector<SampleRowParams> params(rows);
        std::vector<int32_t> ref(rows);
        for (int r = 0; r < rows; ++r) {
            float* row = logits.data() + size_t{1} * r * vocab;
            fill_row(rng, row, vocab, r % 4 == 2 ? 0 : r);
            const int hot = static_cast<int>(rng() % vocab);
            row[hot] = 40.0f;   // a unique maximum (ties at the threshold would all be kept)
            ref[r] = hot;
            params[r] = random_params(rng, vocab);
            params[r].top_k = 1;
            if (params[r].temperature == 0.0f) params[r].temperature = 0.5f;
        }
        EXPECT_EQ(run_sample_rows(logits, rows, vocab, params), ref);
    }
}

TEST_F(SampleRowsTest, TemperatureZeroIsArgmaxWithLowestIndexOnTies) {
    const int vocab = 32000, rows = 19;
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    std::vector<float> logits(size_t{1} * rows * vocab);
    std::vector<SampleRowParams> params(rows, SampleRowParams{0.0f, 0, 1.0f, 0.0f, 0.5f});
    std::vector<int32_t> ref(rows);
    for (int r = 0; r < rows; ++r) {
        float* row = logits.data() + size_t{1} * r * vocab;
        fill_row(rng, row, vocab, r);
        if (r % 2) row[rng() % vocab] = NAN;
        const auto a = static_cast<int>(rng() % vocab), b = static_cast<int>(rng() % vocab);
        row[a] = row[b] = 1000.0f;   // above every other logit
        params[r].u = random_unit(rng);
        ref[r] = reference_argmax(row, vocab);
        ASSERT_EQ(ref[r], std::min(a, b));
    }
    EXPECT_EQ(run_sample_rows(logits, rows, vocab, params), ref);
}

// Every candidate is hit by the u at the middle of its interval, and a grid of u finds nothing else.
TEST_F(SampleRowsTest, USweepHitsExactlyTheCandidateSet) {
    struct Case {
        int vocab;
        float scale;
        SampleRowParams params;
    };
    const Case cases[] = {
        {1000, 2.0f, {1.0f, 0, 0.8f, 0.0f, 0.0f}},        {32000, 2.0f, {0.7f, 50, 1.0f, 0.0f, 0.0f}},
        {1000, 1.5f, {1.0f, 0, 1.0f, 0.1f, 0.0f}},         {5000, 2.0f, {1.3f, 200, 0.9f, 0.01f, 0.0f}},
        {128256, 3.0f, {1.0f, 40, 0.95f, 0.0f, 0.0f}},    {151936, 1.0f, {0.6f, 0, 0.5f, 0.2f, 0.0f}},
    };
    for (const Case& k : cases) {
        const uint32_t seed = fresh_seed();
        SCOPED_TRACE(::testing::Message() << "vocab " << k.vocab << " top_k " << k.params.top_k << " top_p "
                                          << k.params.top_p << " min_p " << k.params.min_p << " seed " << seed);
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, k.scale);
        std::vector<float> row(k.vocab);
        CandidateSet c;
        for (int attempt = 0; attempt < 5 && (attempt == 0 || c.fragile); ++attempt) {
            for (float& l : row) l = normal(rng);
            c = reference_candidates(row.data(), k.vocab, k.params);
        }
        ASSERT_FALSE(c.fragile);
        ASSERT_GT(c.candidates.size(), 1u);
        ASSERT_LT(c.candidates.size(), 1000u);
        std::vector<float> us;
        for (size_t i = 0; i < c.candidates.size(); ++i) {
            const double before = i > 0 ? c.cum_after[i - 1] : 0.0;
            us.push_back(static_cast<float>((before + c.cum_after[i]) / 2 / c.total));
        }
        const size_t num_mid = us.size();
        const int num_grid = k.vocab > 10000 ? 64 : 256;   // every row is a copy of the logits
        for (int g = 0; g < num_grid; ++g) us.push_back(static_cast<float>(g) / num_grid);
        us.push_back(kLastUnit);

        const int rows = static_cast<int>(us.size());
        std::vector<float> logits;
        std::vector<SampleRowParams> params;
        for (float u : us) {
            logits.insert(logits.end(), row.begin(), row.end());
            params.push_back(k.params);
            params.back().u = u;
        }
        const auto got = run_sample_rows(logits, rows, k.vocab, params);
        std::set<int32_t> hit;
        Tally tally;
        for (int r = 0; r < rows; ++r) {
            check_pick(c, us[r], got[r], tally);
            if (static_cast<size_t>(r) >= num_mid) continue;
            EXPECT_FALSE(reference_pick(c, us[r]).fragile) << "interval of candidate " << r << " too narrow";
            EXPECT_EQ(got[r], c.candidates[r]) << "middle of candidate " << r;
            hit.insert(got[r]);
        }
        EXPECT_EQ(hit, std::set<int32_t>(c.candidates.begin(), c.candidates.end()));
        EXPECT_EQ(got[0], c.candidates.front());
        EXPECT_EQ(got[num_mid], c.candidates.front()) << "u = 0";
        EXPECT_EQ(got[rows - 1], c.candidates.back()) << "u just below 1";
    }
}

// Edge values of the filters on one row with a tied maximum at a < b and a unique runner-up.
TEST_F(SampleRowsTest, FilterEdgeValues) {
    const int vocab = 1000;
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    std::vector<float> row(vocab);
    for (float& l : row) l = random_unit(rng) * 4.0f - 2.0f;
    for (int i = 0; i < vocab; i += 7) row[i] = -kInf;   // never picked
    const int a = 100 + static_cast<int>(rng() % 400), b = a + 1 + static_cast<int>(rng() % 400);
    row[a] = row[b] = 5.0f;
    const float below_one = std::nextafter(1.0f, 0.0f);
    struct Edge {
        SampleRowParams params;
        int expect;   // -1: only the reference decides
    };
    const std::vector<Edge> edges = {
        {{1.0f, 0, 1.0f, 1.0f, 0.0f}, a},          // min_p 1: only the tied maxima; u < 1/2 -> a
        {{1.0f, 0, 1.0f, 1.0f, 0.49f}, a},
        {{1.0f, 0, 1.0f, 1.0f, 0.51f}, b},
        {{1.0f, 0, 1.0f, 1.0f, kLastUnit}, b},
        {{1.0f, 0, 1e-7f, 0.0f, 0.3f}, a},         // tiny top_p: the maxima (both kept: a tie)
        {{1.0f, 0, 1e-7f, 0.0f, 0.7f}, b},
        {{1.0f, 0, 0.0f, 0.0f, 0.7f}, b},          // top_p 0 (invalid upstream): same as tiny
        {{1.0f, 1, 1.0f, 0.0f, 0.7f}, b},          // top_k 1 keeps both tied maxima
        {{1.0f, 0, below_one, 0.0f, 0.6f}, -1},    // top_p just below 1: on
        {{1.0f, 0, 1.0f, 0.0f, 0.6f}, -1},         // all filters off
        {{1.0f, vocab, 1.0f, 0.0f, 0.6f}, -2},     // top_k = vocab: off, as above
        {{1.0f, vocab + 9, 1.0f, 1e-30f, 0.6f}, -2},   // and tiny min_p: off in effect
        {{100.0f, 0, 1.0f, 0.0f, 0.25f}, -1},      // hot: nearly uniform
        {{0.05f, 0, 1.0f, 0.0f, 0.75f}, b},        // cold: the maxima only
        {{1.0f, 3, 0.9f, 0.5f, 0.0f}, a},          // u = 0: the lowest-index candidate
    };
    const int rows = static_cast<int>(edges.size());
    std::vector<float> logits;
    std::vector<SampleRowParams> params;
    for (const Edge& e : edges) {
        logits.insert(logits.end(), row.begin(), row.end());
        params.push_back(e.params);
    }
    const auto got = run_sample_rows(logits, rows, vocab, params);
    Tally tally;
    for (int r = 0; r < rows; ++r) {
        SCOPED_TRACE(::testing::Message() << "edge " << r);
        const auto c = reference_candidates(row.data(), vocab, params[r]);
        check_pick(c, params[r].u, got[r], tally);
        if (edges[r].expect >= 0) {
            EXPECT_EQ(got[r], edges[r].expect);
        }
        if (edges[r].expect == -2) {
            EXPECT_EQ(got[r], got[9]) << "a filter that is off changed the pick";
        }
        EXPECT_TRUE(row[got[r]] > -kInf);
    }
    EXPECT_EQ(tally.fragile_filter, 0);
}

TEST_F(SampleRowsTest, VocabOfOneAlwaysAnswersZero) {
    const std::vector<float> logits = {0.5f, -kInf, NAN, 3.0f};
    std::vector<SampleRowParams> params;
    for (int r = 0; r < 4; ++r) params.push_back({r == 0 ? 0.0f : 1.0f, r, 0.5f, 0.1f * r, 0.25f * r});
    EXPECT_EQ(run_sample_rows(logits, 4, 1, params), std::vector<int32_t>(4, 0));
}

// The same row gives the same token in every position of the batch and on every launch.
TEST_F(SampleRowsTest, DeterministicAcrossLaunchesAndRowPositions) {
    const int vocab = 128256, rows = 64;
    const uint32_t seed = fresh_seed();
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937 rng(seed);
    std::vector<float> row(vocab);
    fill_row(rng, row.data(), vocab, 3);   // flat: a long tail of candidates
    std::vector<float> logits;
    for (int r = 0; r < rows; ++r) logits.insert(logits.end(), row.begin(), row.end());
    const std::vector<SampleRowParams> params(rows, SampleRowParams{1.0f, 0, 0.9f, 0.0f, random_unit(rng)});
    const auto first = run_sample_rows(logits, rows, vocab, params);
    EXPECT_EQ(first, std::vector<int32_t>(rows, first[0]));
    EXPECT_EQ(run_sample_rows(logits, rows, vocab, params), first);
}

TEST_F(SampleRowsTest, EmptyBatchIsANoOpAndBadSizesAreErrors) {
    SampleRowParams p{1.0f, 0, 1.0f, 0.0f, 0.5f};
    DeviceBuffer d_params = upload(std::vector<SampleRowParams>{p}), d_logits(16), d_out(4);
    EXPECT_EQ(sample_rows(nullptr, 0, 10, nullptr, nullptr, nullptr, 0, nullptr), cudaSuccess);
    EXPECT_EQ(sample_rows(d_logits.as<float>(), -1, 4, d_params.as<SampleRowParams>(), d_out.as<int32_t>(),
                          nullptr, 0, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(sample_rows(d_logits.as<float>(), 1, 0, d_params.as<SampleRowParams>(), d_out.as<int32_t>(),
                          nullptr, 0, nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(sample_rows(d_logits.as<float>(), 1, 4, nullptr, d_out.as<int32_t>(), nullptr, 0, nullptr),
              cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hichat::cuda
