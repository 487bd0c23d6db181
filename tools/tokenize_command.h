#pragma once

#include "command.h"

namespace hichat::tools {

// `hichat tokenize --model DIR [--decode]`: reads a JSON array of strings on stdin and prints a JSON
// array of id arrays (default encode: special tokens added and parsed); with --decode reads an array
// of id arrays and prints an array of strings (special tokens kept). Bad input: one error line on
// stderr and exit code 2.
const Command& tokenize_command();

}  // namespace hichat::tools
