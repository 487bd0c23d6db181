// CliArgs: the flags of one `hichat` sub-command. Parses `--name value`, `--name=value` and boolean
// `--name`; every lookup is checked so that a typo or a bad number is one clear error line.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"

namespace hichat::tools {

class CliArgs {
public:
    // `value_flags` take a value, `bool_flags` do not; anything else is an error naming the flag.
    static Result<CliArgs> parse(const std::vector<std::string>& args, const std::set<std::string>& value_flags,
                                 const std::set<std::string>& bool_flags);

    bool has(const std::string& name) const { return values_.count(name) > 0; }
    Result<std::string> required(const std::string& name) const;
    std::string get(const std::string& name, const std::string& fallback) const;
    Result<int64_t> get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
    Result<double> get_double(const std::string& name, double fallback, double min, double max) const;
    Result<std::optional<uint64_t>> get_optional_u64(const std::string& name) const;
    // Every value of a repeatable flag, in order.
    std::vector<std::string> get_all(const std::string& name) const;

private:
    std::map<std::string, std::string> values_;               // last value of each flag
    std::map<std::string, std::vector<std::string>> all_values_;
};

}  // namespace hichat::tools
