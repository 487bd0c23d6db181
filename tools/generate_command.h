#pragma once

#include "command.h"

namespace hichat::tools {

// `hichat generate --model DIR --prompt TEXT [...]`: streams the continuation to stdout, then prints
// prompt and generation tokens/s to stderr.
const Command& generate_command();

}  // namespace hichat::tools
