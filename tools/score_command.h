#pragma once
#include <string>
#include <vector>

namespace hichat::tools {
// `hichat score --model DIR --ids 1,2,3 --out FILE [--threads N]`: writes float32 little-endian logits
// [num_ids x vocab], one row per position. Needs no tokenizer files. Returns the process exit code.
int score_main(const std::vector<std::string>& args);
}  // namespace hichat::tools
