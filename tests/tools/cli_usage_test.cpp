// `--help`, `--version` and usage mistakes of every `hichat` command, run through the real binary. The
// expected flags come from the commands' own tables (command_line.h), so the test follows the parser.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli_runner.h"
#include "command_line.h"

namespace hichat {
namespace {

using tools::Command;
using tools::FlagSpec;

// The usage line of `flag`: starts with "  --name" and states its default (or that it is required).
std::string usage_line(const std::string& usage, const FlagSpec& flag) {
    std::istringstream in(usage);
    const std::string start = "  --" + std::string(flag.name) + " ";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(start, 0) == 0) return line;
    }
    return {};
}

void expect_lists_every_flag(const Command& c, const std::string& usage) {
    ASSERT_FALSE(c.flags.empty()) << c.name;
    for (const FlagSpec& f : c.flags) {
        const std::string line = usage_line(usage, f);
        ASSERT_FALSE(line.empty()) << "hichat " << c.name << " --help lacks --" << f.name << "\n" << usage;
        EXPECT_TRUE(line.find("(default: ") != std::string::npos ||
                    line.find("; default: ") != std::string::npos ||
                    line.find("(required)") != std::string::npos)
            << line;
        if (!f.default_value.empty() && f.default_note.empty()) {
            EXPECT_NE(line.find("default: " + std::string(f.default_value) + ")"), std::string::npos) << line;
        }
    }
}

TEST_F(CliTest, EveryCommandsHelpListsEachFlagWithItsDefault) {
    ASSERT_EQ(tools::all_commands().size(),
              6u);  // serve, generate, score, tokenize, bench engine, bench serve
    for (const Command& c : tools::all_commands()) {
        const std::string name(c.name);
        for (const std::string& form : {name + " --help", name + " -h", "help " + name}) {
            auto r = run(form);
            EXPECT_EQ(r.exit_code, 0) << form << "\n" << r.err;
            EXPECT_EQ(r.err, "") << form;
            EXPECT_EQ(r.out.rfind("usage: hichat " + name + " [flags]\n", 0), 0u) << form << "\n" << r.out;
            expect_lists_every_flag(c, r.out);
        }
    }
}

TEST_F(CliTest, HelpWinsOverOtherFlags) {
    // Even after a mistake or with a required flag missing, --help prints the usage.
    auto r = run("generate --bogus 1 --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--prompt TEXT"), std::string::npos) << r.out;
}

TEST_F(CliTest, TopLevelHelpListsEveryCommand) {
    for (const std::string& form : {"--help", "-h", "help"}) {
        auto r = run(form);
        EXPECT_EQ(r.exit_code, 0) << form;
        for (const Command& c : tools::all_commands()) {
            EXPECT_TRUE(contains(r.out, "\n  " + std::string(c.name) + " "))
                << form << " lacks " << c.name << "\n"
                << r.out;
        }
    }
    auto none = run("");
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_EQ(none.out, "");
    EXPECT_TRUE(contains(none.err, "no command given")) << none.err;
    EXPECT_TRUE(contains(none.err, "usage: hichat <command>")) << none.err;
}

TEST_F(CliTest, BareCommandGroupIsAUsageErrorListingItsCommands) {
    auto bare = run("bench");
    EXPECT_EQ(bare.exit_code, 2);
    EXPECT_EQ(bare.out, "");
    EXPECT_TRUE(contains(bare.err, "'bench' needs a command")) << bare.err;
    EXPECT_TRUE(contains(bare.err, "  bench engine ")) << bare.err;
    EXPECT_TRUE(contains(bare.err, "  bench serve ")) << bare.err;
    for (const std::string& form : {"bench --help", "bench -h", "help bench"}) {
        auto help = run(form);
        EXPECT_EQ(help.exit_code, 0) << form;
        EXPECT_TRUE(contains(help.out, "  bench engine ")) << form << "\n" << help.out;
        EXPECT_TRUE(contains(help.out, "  bench serve ")) << form << "\n" << help.out;
    }
    auto unknown = run("bench frob");
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_TRUE(contains(unknown.err, "unknown command 'bench frob'")) << unknown.err;
}

TEST_F(CliTest, UnknownFlagIsNamedWithAPointerToHelp) {
    for (const Command& c : tools::all_commands()) {
        auto r = run(std::string(c.name) + " --no-such-flag 1");
        EXPECT_EQ(r.exit_code, 2) << c.name;
        EXPECT_EQ(count_lines(r.err), 1) << r.err;
        EXPECT_TRUE(contains(r.err, "unknown flag --no-such-flag")) << r.err;
        EXPECT_TRUE(contains(r.err, "hichat " + std::string(c.name) + " --help")) << r.err;
    }
    auto unknown = run("frobnicate");
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_TRUE(contains(unknown.err, "unknown command 'frobnicate'")) << unknown.err;
}

TEST_F(CliTest, VersionNamesVersionCommitAndCuda) {
    for (const std::string& form : {"--version", "version"}) {
        auto r = run(form);
        EXPECT_EQ(r.exit_code, 0) << form;
        EXPECT_EQ(r.out.rfind(std::string("hichat ") + HICHAT_EXPECTED_VERSION + " (commit " +
                                  HICHAT_EXPECTED_COMMIT + ")\n",
                              0),
                  0u)
            << r.out;
        EXPECT_TRUE(contains(r.out, "CUDA backend: ")) << r.out;
    }
    EXPECT_NE(std::string(HICHAT_EXPECTED_COMMIT), "");
}

}  // namespace
}  // namespace hichat

namespace hichat {
namespace {

// One range for top_p everywhere: the flag quotes the range the sampler accepts, (0, 1].
TEST_F(CliTest, TopPQuotesTheSamplersRange) {
    auto r = run("generate --model " + make_model_dir() + " --prompt hi --max-tokens 1 --top-p 0");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(contains(r.err, "--top-p must be a number in (0, 1], got '0'")) << r.err;
}

}  // namespace
}  // namespace hichat
