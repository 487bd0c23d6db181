#pragma once
#include <string>

namespace hichat::tools {
// The folder of the model shipped with HiChat (models/default), found beside the executable:
// <exe>/../../models/default (build tree), <exe>/../models/default (bundle), <exe>/../share/hichat/
// models/default (installed). Empty if none exists.
std::string default_model_dir();
}  // namespace hichat::tools
