#include "cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace hichat::tools {

Result<CliArgs> CliArgs::parse(const std::vector<std::string>& args, const std::set<std::string>& value_flags,
                               const std::set<std::string>& bool_flags) {
    CliArgs out;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("--", 0) != 0) return invalid_argument("unexpected argument '" + a + "'");
        std::string name = a.substr(2), value;
        bool has_inline = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_inline = true;
        }
        if (bool_flags.count(name)) {
            if (has_inline) return invalid_argument("--" + name + " takes no value");
            out.values_[name] = "1";
        } else if (value_flags.count(name)) {
            if (!has_inline) {
                if (i + 1 >= args.size()) return invalid_argument("--" + name + " needs a value");
                value = args[++i];
            }
            out.values_[name] = value;
            out.all_values_[name].push_back(value);
        } else {
            return invalid_argument("unknown flag --" + name);
        }
    }
    return out;
}

std::vector<std::string> CliArgs::get_all(const std::string& name) const {
    auto it = all_values_.find(name);
    return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

Result<std::string> CliArgs::required(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end() || it->second.empty()) return invalid_argument("--" + name + " is required");
    return it->second;
}

std::string CliArgs::get(const std::string& name, const std::string& fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

Result<int64_t> CliArgs::get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0' || v < min || v > max) {
        return invalid_argument("--" + name + " must be an integer in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "], got '" + it->second + "'");
    }
    return static_cast<int64_t>(v);
}

Result<double> CliArgs::get_double(const std::string& name, double fallback, double min, double max) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
        return invalid_argument("--" + name + " must be a number in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "], got '" + it->second + "'");
    }
    return v;
}

Result<std::optional<uint64_t>> CliArgs::get_optional_u64(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::optional<uint64_t>{};
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0' || it->second[0] == '-') {
        return invalid_argument("--" + name + " must be a non-negative integer, got '" + it->second + "'");
    }
    return std::optional<uint64_t>{static_cast<uint64_t>(v)};
}

}  // namespace hichat::tools
