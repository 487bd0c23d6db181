// The layout of 4-bit weights (DType::kQ4: --quantization q4, GPTQ / AWQ / compressed-tensors 4-bit
// checkpoints), shared by the code that writes them (model/on_load_quantization.cpp,
// model/int_weights.cpp) and the kernels that read them (backend/cpu/linear_q4_*.cpp), and the layout
// of the int8 activations those kernels multiply them with.
//
// Weights. A weight [N, K] is N rows of q4_row_bytes(K) bytes: whole blocks of 512 elements (16
// groups of 32), each 4 lines of 64 bytes. In block B, line L, byte 4 l + e (l = 0..15, e = 0..3) holds
// element 512 B + 32 l + 8 L + e in its low nibble and element 512 B + 32 l + 8 L + 4 + e in its high
// nibble. So the low (high) nibbles of a line, read as 16 int32 lanes of 4 bytes, are 4 elements of
// each of the block's 16 groups, one group per lane: 8 vpdpbusd (two per line) sum every group's
// products exactly in its own lane, which is converted and scaled once per block by the lane's own
// scale (16 f16 scales in a row, one cvtph). Nibble u means (u - z) * scale of its group: q4_groups(K)
// f16 scales per row (row j's at j * q4_groups(K)); z = 8 for symmetric weights, else the group's
// zero code (one byte per group, laid out as the scales). Past K a row holds code 8 and its groups
// past K scale 0.
//
// Activations. x quantized to int8 for these weights holds signed codes (the vpdpbusd operand that
// is signed), q4_padded(K) per row, in the order of the weights' lanes: byte 64 t + 4 l + e of block B
// holds element 512 B + 32 l + 4 t + e (t = 0..7), so the 64 bytes at 64 t of a block are the operand
// of the weights' t-th nibble plane (line t / 2, low nibbles for even t). Past K the codes are 0.
#pragma once

#include <cstdint>

namespace hichat {

inline constexpr int64_t kQ4Group = 32;
inline constexpr int64_t kQ4BlockElements = 512;
inline constexpr int64_t kQ4BlockBytes = 256;
inline constexpr int64_t kQ4GroupsPerBlock = kQ4BlockElements / kQ4Group;
inline constexpr int kQ4ZeroCode = 8;

inline int64_t q4_blocks(int64_t k) { return (k + kQ4BlockElements - 1) / kQ4BlockElements; }
inline int64_t q4_padded(int64_t k) { return q4_blocks(k) * kQ4BlockElements; }
inline int64_t q4_row_bytes(int64_t k) { return q4_blocks(k) * kQ4BlockBytes; }
inline int64_t q4_groups(int64_t k) { return q4_blocks(k) * kQ4GroupsPerBlock; }

// The byte of a row that holds element c, and the shift of its nibble (0 or 4).
inline int64_t q4_byte(int64_t c) {
    const int64_t in_block = c % kQ4BlockElements, in_group = in_block % kQ4Group;
    return (c / kQ4BlockElements) * kQ4BlockBytes + (in_group / 8) * 64 + (in_block / kQ4Group) * 4 + in_group % 4;
}
inline int q4_shift(int64_t c) { return static_cast<int>((c % 8) / 4 * 4); }

// The code of element c of a row (for writers, references and tests; not for inner loops).
inline int q4_code(const uint8_t* row, int64_t c) { return (row[q4_byte(c)] >> q4_shift(c)) & 0x0f; }

// Writes codes[0, q4_padded(k)) (each 0..15) as one row of q4_row_bytes(k) bytes.
inline void q4_pack_row(const uint8_t* codes, int64_t k, uint8_t* row) {
    for (int64_t b = 0; b < q4_row_bytes(k); ++b) row[b] = 0;
    for (int64_t c = 0; c < q4_padded(k); ++c) row[q4_byte(c)] |= static_cast<uint8_t>(codes[c] << q4_shift(c));
}

// Where element c of a row of activations goes in the quantized row for 4-bit weights.
inline int64_t q4_x_index(int64_t c) {
    const int64_t in_block = c % kQ4BlockElements, in_group = in_block % kQ4Group;
    return (c / kQ4BlockElements) * kQ4BlockElements + (in_group / 4) * 64 + (in_block / kQ4Group) * 4 + in_group % 4;
}

}  // namespace hichat
