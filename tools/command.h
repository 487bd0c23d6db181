// Command: one `hichat` command (`serve`, `bench engine`, ...): its name, a one-line summary, its flag
// table and its entry point. The dispatcher (command_line.h) parses the flags against the table and
// answers `--help` from it before `run` is called, so every command gets the same usage and errors.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cli_args.h"
#include "flag_spec.h"

namespace hichat::tools {

struct Command {
    std::string_view name;     // "serve"; a two-word name ("bench engine") belongs to a group ("bench")
    std::string_view summary;  // one line, for `hichat --help`
    std::string_view details;  // printed after the usage line of `hichat NAME --help` (may be empty)
    std::span<const FlagSpec> flags;
    int (*run)(const CliArgs& flags);  // the process exit code
};

// `usage: hichat NAME [flags]`, the details, then one line per flag with its default.
std::string command_usage(const Command& command);

}  // namespace hichat::tools
