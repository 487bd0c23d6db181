#pragma once

#include "command.h"

namespace hichat::tools {

// `hichat score --model DIR --ids 1,2,3 --out FILE`: writes float32 little-endian logits
// [num_ids x vocab], one row per position. Needs no tokenizer files.
const Command& score_command();

}  // namespace hichat::tools
