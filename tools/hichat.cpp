// The `hichat` command: dispatches to one command per file (command_line.h).
#include <string>
#include <vector>

#include "command_line.h"

int main(int argc, char** argv) { return hichat::tools::run_command_line({argv + 1, argv + argc}); }
