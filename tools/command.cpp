#include "command.h"

namespace hichat::tools {

std::string command_usage(const Command& command) {
    std::string out = "usage: hichat " + std::string(command.name) + " [flags]\n";
    out += std::string(command.summary) + "\n";
    if (!command.details.empty()) out += std::string(command.details);
    out += "\nflags:\n" + flag_usage(command.flags);
    return out;
}

}  // namespace hichat::tools
