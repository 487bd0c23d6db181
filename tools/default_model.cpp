#include "default_model.h"

#include <filesystem>
#include <system_error>

namespace hichat::tools {

std::string default_model_dir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return "";
    const fs::path dir = exe.parent_path();
    for (const fs::path& candidate : {dir / "../../models/default", dir / "../models/default",
                                      dir / "../share/hichat/models/default"}) {
        if (fs::exists(candidate / "config.json", ec)) return fs::weakly_canonical(candidate, ec).string();
    }
    return "";
}

}  // namespace hichat::tools
