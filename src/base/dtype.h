// Element types of stored weights and their conversions to float.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace hichat {

enum class DType { kF32, kF16, kBF16 };

inline int dtype_size_bytes(DType t) { return t == DType::kF32 ? 4 : 2; }
std::string_view dtype_name(DType t);

inline float bf16_to_f32(uint16_t h) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

}  // namespace hichat
