#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace hichat::tools {

// `hichat bench engine --model DIR [...]`: random prompt ids, B sequences prefilled together, then
// decoded together with greedy sampling and no EOS. Prints a table and one JSON line per run (median
// of the repeats).
const Command& bench_engine_command();

// The same from a plain argument list (for tools that embed the benchmark, such as step_timeline).
int bench_engine_main(const std::vector<std::string>& args);

}  // namespace hichat::tools
