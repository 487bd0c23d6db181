#include "base/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hichat {
namespace {

TEST(DType, Bf16RoundTripsRepresentableValues) {
    for (float f : {0.0f, 1.0f, -2.5f, 0.15625f, 65536.0f, -1e-20f}) {
        EXPECT_EQ(f32_to_bf16(bf16_to_f32(f32_to_bf16(f))), f32_to_bf16(f));
    }
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(-2.5f)), -2.5f);
    // 1 + 2^-8 is halfway between two bf16 values: ties go to even (1.0).
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

TEST(DType, F16MatchesKnownEncodings) {
    EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);               // overflow to inf
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    for (uint32_t h = 0; h < 0x10000; ++h) {
        float f = f16_to_f32(static_cast<uint16_t>(h));
        if (std::isnan(f)) continue;
        ASSERT_EQ(f32_to_f16(f), h) << h;
    }
}

// The OCP E4M3 (e4m3fn) values from the format's definition: 1 sign, 4 exponent bits (bias 7), 3
// mantissa bits; exponent 0 is subnormal (m / 8 * 2^-6); 0x7f and 0xff are NaN; no infinities.
float e4m3_by_definition(uint8_t code) {
    const int sign = code >> 7, exp = (code >> 3) & 15, mant = code & 7;
    if (exp == 15 && mant == 7) return NAN;
    const double magnitude = exp == 0 ? mant / 8.0 * std::pow(2.0, -6) : (1.0 + mant / 8.0) * std::pow(2.0, exp - 7);
    return static_cast<float>(sign ? -magnitude : magnitude);
}

// Nearest finite E4M3 code to x by search, ties to the even code, saturating at +-448.
uint8_t nearest_e4m3(float x) {
    int best = -1;
    double best_err = INFINITY;
    for (int code = 0; code < 256; ++code) {
        const float v = e4m3_by_definition(static_cast<uint8_t>(code));
        if (std::isnan(v) || (std::signbit(v) != std::signbit(x))) continue;
        const double err = std::fabs(static_cast<double>(v) - x);
        if (err < best_err || (err == best_err && (code & 1) == 0)) {
            best = code;
            best_err = err;
        }
    }
    return static_cast<uint8_t>(best);
}

TEST(DType, Fp8E4M3DecodesEveryCodeAsDefined) {
    EXPECT_EQ(fp8_e4m3_to_f32(0x7e), 448.0f);
    EXPECT_EQ(fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
    EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);
    for (int code = 0; code < 256; ++code) {
        const float want = e4m3_by_definition(static_cast<uint8_t>(code));
        const float got = fp8_e4m3_to_f32(static_cast<uint8_t>(code));
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << code;
        } else {
            EXPECT_EQ(got, want) << code;
            EXPECT_EQ(std::signbit(got), std::signbit(want)) << code;
            EXPECT_EQ(f32_to_fp8_e4m3(got), code) << code;  // every finite code round-trips
        }
    }
}

TEST(DType, Fp8E4M3EncodesToTheNearestCodeTiesToEvenAndSaturates) {
    std::vector<float> xs = {0.0f, -0.0f, 448.0f, 449.0f, 464.0f, 1e6f, -1e6f, INFINITY, -INFINITY, 1e-30f, -1e-30f};
    for (int code = 0; code < 255; ++code) {  // every midpoint between neighbours, and points around it
        const float a = e4m3_by_definition(static_cast<uint8_t>(code & 0x7f));
        const float b = e4m3_by_definition(static_cast<uint8_t>((code & 0x7f) + 1));
        if (std::isnan(a) || std::isnan(b)) continue;
        const float mid = (a + b) / 2, sign = code & 0x80 ? -1.0f : 1.0f;
        for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f), a, b}) xs.push_back(sign * x);
    }
    uint32_t state = 12345;
    for (int i = 0; i < 20000; ++i) {  // random magnitudes from 2^-12 to 2^10
        state = state * 1664525u + 1013904223u;
        const float unit = static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
        xs.push_back((i & 1 ? -1.0f : 1.0f) * std::ldexp(1.0f + unit, static_cast<int>(state % 22) - 12));
    }
    for (float x : xs) ASSERT_EQ(f32_to_fp8_e4m3(x), nearest_e4m3(x)) << x;
    EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(f32_to_fp8_e4m3(NAN))));
    EXPECT_EQ(f32_to_fp8_e4m3(1e6f), 0x7e);
    EXPECT_EQ(f32_to_fp8_e4m3(-INFINITY), 0xfe);
}

}  // namespace
}  // namespace hichat
