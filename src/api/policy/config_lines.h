// Reading of the small line-based files given on the command line (API key files, deny lists):
// one entry per line, surrounding whitespace trimmed, blank lines and lines starting with '#' skipped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hichat::api {

struct ConfigLine {
    int line_number = 0;  // 1-based, for error messages
    std::string text;     // trimmed, never empty, never a comment
};

// Errors: kNotFound naming the path if it cannot be read; kInvalidArgument naming the path and line
// if a line holds a NUL byte.
Result<std::vector<ConfigLine>> read_config_lines(const std::string& path);

// Same rules applied to text already in memory; `source` names it in errors.
Result<std::vector<ConfigLine>> split_config_lines(std::string_view text, const std::string& source);

// Wipes a string's bytes (OpenSSL_cleanse) so that secrets do not linger in freed memory.
void wipe(std::string& s);

}  // namespace hichat::api
