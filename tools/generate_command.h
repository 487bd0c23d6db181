#pragma once
#include <string>
#include <vector>

namespace hichat::tools {
// `hichat generate --model DIR --prompt TEXT [--max-tokens N] [--temperature T] [--top-p P] [--top-k K]
//  [--min-p P] [--seed S] [--threads N] [--ignore-eos]`: streams the continuation to stdout, then prints
// prompt and generation tokens/s to stderr. Returns the process exit code.
int generate_main(const std::vector<std::string>& args);
}  // namespace hichat::tools
