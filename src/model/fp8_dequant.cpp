#include "model/fp8_dequant.h"

#include "base/check.h"

namespace hichat::model {

void dequantize_fp8_to_bf16(const WeightTensor& t, uint16_t* out) {
    CHECK(t.dtype == DType::kF8E4M3 && t.shape.size() == 2) << dtype_name(t.dtype);
    const int64_t n = t.rows(), k = t.cols();
    const QuantScales& s = t.scales;
    CHECK(s.block_rows > 0 && s.block_cols > 0) << s.block_rows << "x" << s.block_cols;
    const int64_t grid_cols = (k + s.block_cols - 1) / s.block_cols;
    float table[256];
    for (int q = 0; q < 256; ++q) table[q] = fp8_e4m3_to_f32(static_cast<uint8_t>(q));
    const auto* q = static_cast<const uint8_t*>(t.data);
    std::vector<float> row_scales(static_cast<size_t>(grid_cols));
    for (int64_t row = 0; row < n; ++row) {
        const int64_t scale_row = (row / s.block_rows) * grid_cols;
        for (int64_t g = 0; g < grid_cols; ++g) row_scales[g] = load_as_f32(s.data, s.dtype, scale_row + g);
        for (int64_t col = 0; col < k; ++col) {
            out[row * k + col] = f32_to_bf16(table[q[row * k + col]] * row_scales[col / s.block_cols]);
        }
    }
}

}  // namespace hichat::model
