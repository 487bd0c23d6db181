#include "command_line.h"

#include <cstdio>

#include "bench_engine_command.h"
#include "bench_serve_command.h"
#include "generate_command.h"
#include "score_command.h"
#include "serve_command.h"
#include "tokenize_command.h"
#include "version.h"

namespace hichat::tools {
namespace {

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

// The group of a two-word command ("bench" of "bench engine"); empty for a one-word command.
std::string_view group_of(const Command& c) {
    const size_t space = c.name.find(' ');
    return space == std::string_view::npos ? std::string_view() : c.name.substr(0, space);
}

const Command* find_command(std::string_view name) {
    for (const Command& c : all_commands()) {
        if (c.name == name) return &c;
    }
    return nullptr;
}

bool is_group(std::string_view name) {
    for (const Command& c : all_commands()) {
        if (group_of(c) == name) return true;
    }
    return false;
}

// The commands of `group` (all when empty), one line each with the summary.
std::string command_list(std::string_view group) {
    std::string out;
    for (const Command& c : all_commands()) {
        if (!group.empty() && group_of(c) != group) continue;
        const std::string name(c.name);
        out += "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') +
               std::string(c.summary) + "\n";
    }
    return out;
}

std::string top_usage() {
    return "usage: hichat <command> [flags]\n"
           "       hichat <command> --help    the command's flags, one per line, with their defaults\n"
           "       hichat --version           version, commit and whether the build has CUDA\n"
           "\ncommands:\n" +
           command_list({});
}

std::string group_usage(std::string_view group) {
    const std::string g(group);
    return "usage: hichat " + g +
           " <command> [flags]\n"
           "       hichat " +
           g +
           " <command> --help\n"
           "\ncommands:\n" +
           command_list(group);
}

int usage_error(const std::string& message, const std::string& usage) {
    std::fprintf(stderr, "hichat: %s\n%s", message.c_str(), usage.c_str());
    return 2;
}

int print(const std::string& text) {
    std::fputs(text.c_str(), stdout);
    return 0;
}

// `hichat help`, `hichat help serve`, `hichat help bench engine`.
int help(const std::vector<std::string>& words) {
    std::string name;
    for (const std::string& w : words) name += (name.empty() ? "" : " ") + w;
    if (name.empty()) return print(top_usage());
    if (const Command* c = find_command(name)) return print(command_usage(*c));
    if (is_group(name)) return print(group_usage(name));
    return usage_error("unknown command '" + name + "'", top_usage());
}

}  // namespace

int run_command(const Command& c, const std::vector<std::string>& args) {
    auto flags = CliArgs::parse(args, c.flags);
    if (!flags.ok()) {
        std::fprintf(stderr, "hichat %s: %s (see `hichat %s --help`)\n", std::string(c.name).c_str(),
                     flags.status().message().c_str(), std::string(c.name).c_str());
        return 2;
    }
    if (flags->help_requested()) return print(command_usage(c));
    return c.run(*flags);
}

std::span<const Command> all_commands() {
    static const Command commands[] = {serve_command(),    generate_command(),     score_command(),
                                       tokenize_command(), bench_engine_command(), bench_serve_command()};
    return commands;
}

int run_command_line(const std::vector<std::string>& args) {
    if (args.empty()) return usage_error("no command given", top_usage());
    const std::string& first = args[0];
    if (first == "--version" || first == "version") return print(version_text());
    if (is_help(first)) return help({args.begin() + 1, args.end()});
    if (const Command* c = find_command(first)) return run_command(*c, {args.begin() + 1, args.end()});
    if (!is_group(first)) return usage_error("unknown command '" + first + "'", top_usage());
    if (args.size() >= 2 && is_help(args[1])) return print(group_usage(first));
    if (args.size() < 2) return usage_error("'" + first + "' needs a command", group_usage(first));
    if (const Command* c = find_command(first + " " + args[1]))
        return run_command(*c, {args.begin() + 2, args.end()});
    return usage_error("unknown command '" + first + " " + args[1] + "'", group_usage(first));
}

}  // namespace hichat::tools
