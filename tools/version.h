// What `hichat --version` prints: the project version from CMake, the git commit the build tree was
// configured from ("unknown" outside a git checkout) and whether this build has the CUDA backend.
#pragma once

#include <string>

namespace hichat::tools {

// "hichat 0.1.0 (commit b10a11a9c3f2)\nCUDA backend: built in; device present\n"
std::string version_text();

}  // namespace hichat::tools
