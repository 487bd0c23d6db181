// The `hichat` command: dispatches to one sub-command per file.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_engine_command.h"
#include "bench_serve_command.h"
#include "generate_command.h"
#include "score_command.h"
#include "serve_command.h"
#include "serve_options.h"
#include "tokenize_command.h"

namespace {

constexpr const char* kUsage =
    "usage: hichat <command> [flags]\n"
    "  generate --model DIR --prompt TEXT [--max-tokens N] [--temperature T] [--top-p P] [--top-k K]\n"
    "           [--min-p P] [--repetition-penalty R] [--seed S] [--threads N] [--ignore-eos]\n"
    "  score    --model DIR --ids 1,2,3 --out FILE [--threads N]\n"
    "  tokenize --model DIR [--decode]     (JSON on stdin, JSON on stdout)\n"
    "  bench engine --model DIR [--input-len N] [--output-len N] [--batch B] [--threads N] [--repeat R] [--no-overlap]\n";

}  // namespace

int main(int argc, char** argv) {
    const std::string usage = std::string(kUsage) + hichat::tools::kBenchServeUsage + hichat::tools::kServeUsage;
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        std::fputs(usage.c_str(), argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    std::string command = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    if (command == "serve") return hichat::tools::serve_main(args);
    if (command == "generate") return hichat::tools::generate_main(args);
    if (command == "score") return hichat::tools::score_main(args);
    if (command == "tokenize") return hichat::tools::tokenize_main(args);
    if (command == "bench" && !args.empty() && args[0] == "engine") {
        return hichat::tools::bench_engine_main({args.begin() + 1, args.end()});
    }
    if (command == "bench" && !args.empty() && args[0] == "serve") {
        return hichat::tools::bench_serve_main({args.begin() + 1, args.end()});
    }
    std::fprintf(stderr, "hichat: unknown command '%s'\n%s", command.c_str(), usage.c_str());
    return 2;
}
