#include "cli_args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace hichat::tools {
namespace {

bool is_help(const std::string& a) { return a == "--help" || a == "-h"; }

std::string bound_text(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<long long>(v));
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    return s;
}

}  // namespace

Result<CliArgs> CliArgs::parse(const std::vector<std::string>& args, std::span<const FlagSpec> table) {
    CliArgs out;
    out.table_ = table;
    Status status = ok_status();
    for (size_t i = 0; i < args.size() && status.ok(); ++i) {
        const std::string& a = args[i];
        if (is_help(a)) {
            out.help_ = true;
            continue;
        }
        if (a.rfind("--", 0) != 0) {
            status = invalid_argument(a.rfind("-", 0) == 0 ? "unknown flag " + a
                                                           : "unexpected argument '" + a + "'");
            break;
        }
        std::string name = a.substr(2), value;
        const size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        const FlagSpec* f = find_flag(table, name);
        if (f == nullptr) {
            status = invalid_argument("unknown flag --" + name);
        } else if (f->kind == FlagKind::kBool) {
            if (eq != std::string::npos) status = invalid_argument("--" + name + " takes no value");
            out.values_[name] = "1";
        } else if (eq == std::string::npos && i + 1 >= args.size()) {
            status = invalid_argument("--" + name + " needs a value");
        } else {
            if (eq == std::string::npos) value = args[++i];
            out.values_[name] = value;
            out.all_values_[name].push_back(value);
        }
    }
    // `--help` wins over anything else on the line, even a mistake before it.
    if (out.help_ || std::any_of(args.begin(), args.end(), is_help)) {
        out.help_ = true;
        return out;
    }
    HICHAT_RETURN_IF_ERROR(status);
    for (const FlagSpec& f : table) {
        if (f.required && (!out.has(std::string(f.name)) || out.get(std::string(f.name)).empty())) {
            return invalid_argument("--" + std::string(f.name) + " is required");
        }
    }
    return out;
}

Result<const FlagSpec*> CliArgs::spec(const std::string& name, FlagKind kind) const {
    const FlagSpec* f = find_flag(table_, name);
    if (f == nullptr || f->kind != kind)
        return internal_error("flag --" + name + " is not declared with this kind");
    return f;
}

std::string CliArgs::get(const std::string& name) const {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    const FlagSpec* f = find_flag(table_, name);
    return f == nullptr ? std::string() : std::string(f->default_value);
}

std::vector<std::string> CliArgs::get_all(const std::string& name) const {
    auto it = all_values_.find(name);
    return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

Result<int64_t> CliArgs::parse_int(const FlagSpec& f, const std::string& text) const {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || end == text.c_str() || *end != '\0' || v < f.min || v > f.max) {
        return invalid_argument("--" + std::string(f.name) + " must be an integer in [" + bound_text(f.min) +
                                ", " + bound_text(f.max) + "], got '" + text + "'");
    }
    if (v > flag_max(f)) {
        return invalid_argument("--" + std::string(f.name) + " " + text + " is more than " +
                                std::to_string(f.max_per_online_core) + " per online core: at most " +
                                bound_text(flag_max(f)) + " on this machine (" +
                                std::to_string(online_cores()) + " cores)");
    }
    return static_cast<int64_t>(v);
}

Result<int64_t> CliArgs::get_int(const std::string& name) const {
    auto f = spec(name, FlagKind::kInt);
    HICHAT_RETURN_IF_ERROR(f.status());
    auto it = values_.find(name);
    return parse_int(**f, it != values_.end() ? it->second : std::string((*f)->default_value));
}

Result<int64_t> CliArgs::get_int(const std::string& name, int64_t computed_default) const {
    auto f = spec(name, FlagKind::kInt);
    HICHAT_RETURN_IF_ERROR(f.status());
    auto it = values_.find(name);
    return it != values_.end() ? parse_int(**f, it->second) : Result<int64_t>(computed_default);
}

Result<double> CliArgs::get_double(const std::string& name) const {
    auto f = spec(name, FlagKind::kNumber);
    HICHAT_RETURN_IF_ERROR(f.status());
    auto it = values_.find(name);
    const std::string text = it != values_.end() ? it->second : std::string((*f)->default_value);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const bool below = (*f)->min_excluded ? v <= (*f)->min : v < (*f)->min;
    if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || below || v > (*f)->max) {
        return invalid_argument("--" + name + " must be a number in " + ((*f)->min_excluded ? "(" : "[") +
                                bound_text((*f)->min) + ", " + bound_text((*f)->max) + "], got '" + text + "'");
    }
    return v;
}

Result<std::optional<uint64_t>> CliArgs::get_optional_u64(const std::string& name) const {
    HICHAT_RETURN_IF_ERROR(spec(name, FlagKind::kUnsigned).status());
    auto it = values_.find(name);
    if (it == values_.end()) return std::optional<uint64_t>{};
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0' ||
        !std::isdigit(static_cast<unsigned char>(it->second[0]))) {
        return invalid_argument("--" + name + " must be an integer in [0, 2^64 - 1], got '" + it->second +
                                "'");
    }
    return std::optional<uint64_t>{static_cast<uint64_t>(v)};
}

}  // namespace hichat::tools
