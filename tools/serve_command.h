#pragma once
#include <string>
#include <vector>

namespace hichat::tools {
// `hichat serve --model DIR [--host H] [--port P] [...]`: the OpenAI-compatible HTTP server.
// Returns the process exit code (0 after a graceful SIGTERM/SIGINT shutdown).
int serve_main(const std::vector<std::string>& args);
}  // namespace hichat::tools
