#include "version.h"

#include "executor/runner_factory.h"

#ifndef HICHAT_VERSION
#define HICHAT_VERSION "unknown"
#endif
#ifndef HICHAT_GIT_COMMIT
#define HICHAT_GIT_COMMIT "unknown"
#endif

namespace hichat::tools {

std::string version_text() {
    std::string text = std::string("hichat ") + HICHAT_VERSION + " (commit " + HICHAT_GIT_COMMIT + ")\n";
#ifdef HICHAT_HAVE_CUDA
    text += std::string("CUDA backend: built in; ") +
            (executor::cuda_available() ? "device present\n" : "no device found\n");
#else
    text += "CUDA backend: not built in (CPU only)\n";
#endif
    return text;
}

}  // namespace hichat::tools
