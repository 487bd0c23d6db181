// FlagSpec: one row of a command's flag table. Each command declares its flags once, in one table;
// CliArgs parses against it (names, value kinds, defaults, ranges) and flag_usage() prints the
// `--help` lines from it, so the usage text cannot drift from the parser.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace hichat::tools {

enum class FlagKind {
    kBool,      // `--name`, no value
    kString,    // `--name VALUE`; the last one given wins
    kRepeated,  // `--name VALUE`, may be given several times; all values kept in order
    kInt,       // integer in [min, max]
    kNumber,    // finite number in [min, max]
    kUnsigned,  // non-negative 64-bit integer, no default (e.g. a seed)
};

struct FlagSpec {
    std::string_view name;  // without the leading "--"
    FlagKind kind = FlagKind::kString;
    std::string_view value_name;         // shown in the usage: "N", "DIR" (empty for kBool)
    std::string_view default_value;      // parsed when the flag is absent; empty: none
    std::string_view help;               // one line
    double min = 0, max = 0;             // kInt / kNumber: the accepted range
    int max_per_online_core = 0;         // kInt: > 0: also at most this many times the online cores
    std::string_view default_note = {};  // shown instead of default_value when the default is computed
    bool required = false;               // parse() fails when it is missing
    bool min_excluded = false;           // kNumber: the range is (min, max]
};

// The cores the OS has online (at least 1): the base of FlagSpec::max_per_online_core.
int online_cores();

// The upper bound of an integer flag on this machine (the smaller of max and the per-core cap).
double flag_max(const FlagSpec& spec);

// One line per flag, "  --name VALUE   help (default: ...)", aligned, then the --help line.
std::string flag_usage(std::span<const FlagSpec> flags);

// The row named `name`, or nullptr.
const FlagSpec* find_flag(std::span<const FlagSpec> flags, std::string_view name);

}  // namespace hichat::tools
