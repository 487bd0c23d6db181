#include "flag_spec.h"

#include <algorithm>
#include <thread>

namespace hichat::tools {
namespace {

std::string left_column(const FlagSpec& f) {
    std::string s = "--" + std::string(f.name);
    if (f.kind != FlagKind::kBool) s += " " + std::string(f.value_name);
    return s;
}

std::string default_text(const FlagSpec& f) {
    if (f.required) return "required";
    std::string value = !f.default_note.empty()     ? std::string(f.default_note)
                        : !f.default_value.empty()  ? std::string(f.default_value)
                        : f.kind == FlagKind::kBool ? "off"
                                                    : "none";
    if (f.kind == FlagKind::kRepeated) return "repeatable; default: " + value;
    return "default: " + value;
}

}  // namespace

int online_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

double flag_max(const FlagSpec& spec) {
    if (spec.max_per_online_core <= 0) return spec.max;
    return std::min(spec.max, static_cast<double>(spec.max_per_online_core) * online_cores());
}

std::string flag_usage(std::span<const FlagSpec> flags) {
    const FlagSpec help{
        .name = "help", .kind = FlagKind::kBool, .help = "print this help and exit (also -h)"};
    size_t width = left_column(help).size();
    for (const FlagSpec& f : flags) width = std::max(width, left_column(f).size());
    std::string out;
    auto add_line = [&](const FlagSpec& f, const std::string& suffix) {
        std::string left = left_column(f);
        out += "  " + left + std::string(width + 2 - left.size(), ' ') + std::string(f.help) + suffix + "\n";
    };
    for (const FlagSpec& f : flags) add_line(f, " (" + default_text(f) + ")");
    add_line(help, "");
    return out;
}

const FlagSpec* find_flag(std::span<const FlagSpec> flags, std::string_view name) {
    for (const FlagSpec& f : flags) {
        if (f.name == name) return &f;
    }
    return nullptr;
}

}  // namespace hichat::tools
