// The layout of 4-bit weights (DType::kQ4, --quantization q4), shared by the code that writes them
// (model/on_load_quantization.cpp) and the kernels that read them (backend/cpu/linear_q4_*.cpp).
// A weight [N, K] is N rows of q4_row_bytes(K) bytes, each row whole 64-byte lines of 128 elements:
// in line L, byte b holds element 128 L + b in its low nibble and element 128 L + 64 + b in its high
// nibble (so one line unpacks, with a mask and a shift, into the two 64-byte halves of the activations
// it multiplies). Nibble u means (u - z) * scale of its group: groups of kQ4Group = 32 elements along
// the row, q4_groups(K) f16 scales per row (row j's at j * q4_groups(K)); z = 8 for symmetric weights
// (--quantization q4), else the group's zero code (one byte per group, laid out as the scales). Past K
// a row holds code 8 (it multiplies the activations' zero padding) and its groups past K scale 0.
#pragma once

#include <cstdint>

namespace hichat {

inline constexpr int64_t kQ4Group = 32;
inline constexpr int64_t kQ4LineElements = 128;
inline constexpr int kQ4ZeroCode = 8;

inline int64_t q4_lines(int64_t k) { return (k + kQ4LineElements - 1) / kQ4LineElements; }
inline int64_t q4_row_bytes(int64_t k) { return q4_lines(k) * 64; }
inline int64_t q4_groups(int64_t k) { return q4_lines(k) * (kQ4LineElements / kQ4Group); }

// The code of element c of a row (for references and tests; not for inner loops).
inline int q4_code(const uint8_t* row, int64_t c) {
    const uint8_t byte = row[(c / kQ4LineElements) * 64 + c % 64];
    return (c % kQ4LineElements) < 64 ? (byte & 0x0f) : (byte >> 4);
}

}  // namespace hichat
