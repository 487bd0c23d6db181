// embedding(): rows of the token table as float32.
#include "backend/cpu/ops.h"
#include "backend/cpu/weight_reader.h"
#include "base/check.h"

namespace hichat::cpu {

void embedding(const int32_t* ids, int64_t m, const WeightTensor& table, float* out) {
    CHECK_EQ(table.shape.size(), 2u) << "embedding table must be 2-D";
    const int64_t vocab = table.rows(), dim = table.cols();
    with_weight_reader(table.data, table.dtype, [&](auto read) {
        for (int64_t i = 0; i < m; ++i) {
            CHECK(ids[i] >= 0 && ids[i] < vocab) << "token id " << ids[i] << " outside vocab " << vocab;
            const int64_t base = int64_t{ids[i]} * dim;
            float* row = out + i * dim;
            for (int64_t d = 0; d < dim; ++d) row[d] = read(base + d);
        }
    });
}

}  // namespace hichat::cpu
