#pragma once

#include "command.h"

namespace hichat::tools {

// `hichat serve [--model DIR] [--host H] [--port P] [...]`: the OpenAI-compatible HTTP server. Exit
// code 0 after a graceful SIGTERM/SIGINT shutdown, 2 when it cannot start (one error line).
const Command& serve_command();

}  // namespace hichat::tools
