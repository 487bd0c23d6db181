// The `hichat` command line: finds the command, parses its flags, answers `--help`, `--version` and
// mistakes. Conventions, the same for every command:
//   - asked-for output (`hichat --help`, `hichat help [COMMAND]`, `hichat COMMAND --help`,
//     `hichat --version`, `hichat version`) goes to stdout, exit code 0;
//   - a usage mistake (no command, a command group without its subcommand such as a bare `hichat bench`,
//     an unknown command or flag, a bad value) prints one error line naming it, and the usage where that
//     helps, to stderr, exit code 2.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "command.h"

namespace hichat::tools {

// Every command, in the order `hichat --help` lists them.
std::span<const Command> all_commands();

// One command: parse `args` against its flags, answer --help, else run it; returns the exit code.
int run_command(const Command& command, const std::vector<std::string>& args);

// The whole `hichat` run for argv[1..]; returns the process exit code.
int run_command_line(const std::vector<std::string>& args);

}  // namespace hichat::tools
