// CliArgs: the flags of one `hichat` command, parsed against its FlagSpec table. Parses `--name value`,
// `--name=value` and boolean `--name`; `-h` / `--help` anywhere asks for the usage. Every lookup is
// checked against the table (kind, range, per-core cap) so that a typo or a bad number is one clear
// error line naming the flag; an absent flag reads as the table's default.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "flag_spec.h"

namespace hichat::tools {

class CliArgs {
public:
    // A flag not in `table`, a missing value or a missing required flag (unless help was asked for)
    // is an error naming the flag. `table` must outlive the CliArgs.
    static Result<CliArgs> parse(const std::vector<std::string>& args, std::span<const FlagSpec> table);

    bool help_requested() const { return help_; }
    bool has(const std::string& name) const { return values_.count(name) > 0; }  // given by the user
    // The value given, else the table's default ("" when it has none).
    std::string get(const std::string& name) const;
    // Every value of a repeatable flag, in order.
    std::vector<std::string> get_all(const std::string& name) const;
    // The value given, else the table's default; checked against the table's range.
    Result<int64_t> get_int(const std::string& name) const;
    // For a flag whose default is computed (its table row has a default_note): the value given, else
    // `computed_default`.
    Result<int64_t> get_int(const std::string& name, int64_t computed_default) const;
    Result<double> get_double(const std::string& name) const;
    Result<std::optional<uint64_t>> get_optional_u64(const std::string& name) const;

private:
    Result<const FlagSpec*> spec(const std::string& name, FlagKind kind) const;
    Result<int64_t> parse_int(const FlagSpec& f, const std::string& text) const;

    std::span<const FlagSpec> table_;
    bool help_ = false;
    std::map<std::string, std::string> values_;  // last value of each flag
    std::map<std::string, std::vector<std::string>> all_values_;
};

}  // namespace hichat::tools
