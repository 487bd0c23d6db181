#pragma once
#include <string>
#include <vector>

namespace hichat::tools {
// `hichat bench engine --model DIR [--input-len 128] [--output-len 32] [--batch 1] [--threads N]
//  [--repeat 3]`: random prompt ids, B sequences prefilled together, then decoded together with greedy
// sampling and no EOS. Prints a table and one JSON line per run (median of the repeats).
int bench_engine_main(const std::vector<std::string>& args);
}  // namespace hichat::tools
