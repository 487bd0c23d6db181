#include "base/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace hichat
