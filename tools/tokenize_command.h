#pragma once
#include <string>
#include <vector>

namespace hichat::tools {
// `hichat tokenize --model DIR [--decode]`: reads a JSON array of strings on stdin and prints a JSON
// array of id arrays (default encode: special tokens added and parsed); with --decode reads an array
// of id arrays and prints an array of strings (special tokens kept). Bad input: one error line on
// stderr and exit code 2. Returns the process exit code.
int tokenize_main(const std::vector<std::string>& args);
}  // namespace hichat::tools
