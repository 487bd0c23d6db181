#include "base/dtype.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hichat {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::kF32: return "F32";
        case DType::kF16: return "F16";
        case DType::kBF16: return "BF16";
        case DType::kF8E4M3: return "F8_E4M3";
        case DType::kI8: return "I8";
        case DType::kQ4: return "Q4";
        case DType::kI32: return "I32";
        case DType::kI64: return "I64";
    }
    return "?";
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint32_t sign = (bits >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((bits >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = bits & 0x7fffffu;
    if (((bits >> 23) & 0xffu) == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | static_cast<uint32_t>(exp) << 10 | mant >> 13;
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(half);
}

float fp8_e4m3_to_f32(uint8_t q) {
    const uint32_t sign = static_cast<uint32_t>(q & 0x80u) << 24;
    const uint32_t exp = (q >> 3) & 0xfu;
    const uint32_t mant = q & 0x7u;
    float magnitude;
    if (exp == 0xfu && mant == 0x7u) {
        magnitude = std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0) {
        magnitude = std::ldexp(static_cast<float>(mant), -9);  // subnormal: mant * 2^-6 / 8
    } else {
        magnitude = std::ldexp(static_cast<float>(8u + mant), static_cast<int>(exp) - 10);
    }
    uint32_t bits;
    std::memcpy(&bits, &magnitude, 4);
    bits |= sign;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint8_t f32_to_fp8_e4m3(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
    if (std::isnan(f)) return static_cast<uint8_t>(sign | 0x7fu);
    const float a = std::fabs(f);
    if (a >= kFp8E4M3Max) return static_cast<uint8_t>(sign | 0x7eu);  // saturate (infinity too)
    // The spacing of representable values below a: 2^-9 for subnormals (a < 2^-6), else 2^(e-3).
    int e = 0;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    const int step_exp = std::max(e - 1 - 3, -9);
    const float steps = std::nearbyint(std::ldexp(a, -step_exp));  // round half to even (default mode)
    const float rounded = std::ldexp(steps, step_exp);
    if (rounded == 0.0f) return sign;
    if (rounded < std::ldexp(1.0f, -6)) return static_cast<uint8_t>(sign | static_cast<uint8_t>(steps));
    int re = 0;
    const float rm = std::frexp(rounded, &re);  // rounded = rm * 2^re, rm in [0.5, 1)
    const uint32_t exp_field = static_cast<uint32_t>(re - 1 + 7);
    const uint32_t mant_field = static_cast<uint32_t>(std::ldexp(rm, 4)) - 8u;  // 4 significant bits
    return static_cast<uint8_t>(sign | exp_field << 3 | mant_field);
}

}  // namespace hichat
