// Element types of stored weights and their conversions to float.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

namespace hichat {

// kF8E4M3: OCP FP8 E4M3 ("e4m3fn": no infinities, 0x7f/0xff are NaN, largest finite 448), the
// element type of FP8 checkpoints; their values mean q * scale, with the scale held beside them.
// kI8: signed 8-bit integer codes (int8 weights, --quantization int8), meaning q * scale likewise.
// kQ4: 4-bit codes, two per byte, in the layout of base/q4_layout.h (--quantization q4); not an
// element type of arrays (dtype_size_bytes and load_as_f32 do not take it).
// kI32, kI64: integers of the files of GPTQ, AWQ and compressed-tensors checkpoints (packed codes,
// zero points, group indices, weight shapes); read on load, never a weight the kernels read.
enum class DType { kF32, kF16, kBF16, kF8E4M3, kI8, kQ4, kI32, kI64 };

inline int dtype_size_bytes(DType t) {
    if (t == DType::kI64) return 8;
    return (t == DType::kF32 || t == DType::kI32) ? 4 : (t == DType::kF8E4M3 || t == DType::kI8) ? 1 : t == DType::kQ4 ? 0 : 2;
}
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

// FP8 E4M3 (e4m3fn). Exact to float; from float rounds to nearest even and saturates to +-448
// (as torch's and the CUDA intrinsics' saturating conversion do); NaN stays NaN.
float fp8_e4m3_to_f32(uint8_t q);
uint8_t f32_to_fp8_e4m3(float f);
inline constexpr float kFp8E4M3Max = 448.0f;

// Element `index` of an array of `dtype` at `data` (any alignment), as float. Not for inner loops.
inline float load_as_f32(const void* data, DType dtype, int64_t index) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    uint16_t h = 0;
    float f = 0.0f;
    switch (dtype) {
        case DType::kF32: std::memcpy(&f, bytes + 4 * index, 4); return f;
        case DType::kBF16: std::memcpy(&h, bytes + 2 * index, 2); return bf16_to_f32(h);
        case DType::kF16: std::memcpy(&h, bytes + 2 * index, 2); return f16_to_f32(h);
        case DType::kF8E4M3: return fp8_e4m3_to_f32(bytes[index]);
        case DType::kI8: return static_cast<float>(static_cast<int8_t>(bytes[index]));
        case DType::kI32: {
            int32_t i = 0;
            std::memcpy(&i, bytes + 4 * index, 4);
            return static_cast<float>(i);
        }
        case DType::kI64: {
            int64_t i = 0;
            std::memcpy(&i, bytes + 8 * index, 8);
            return static_cast<float>(i);
        }
        case DType::kQ4: return std::numeric_limits<float>::quiet_NaN();  // not an array type
    }
    return f;
}

}  // namespace hichat
