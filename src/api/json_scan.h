// Scanning JSON text that may be cut short: a reply while it is generated, where a value is either
// complete, still open (more text may complete it) or already invalid. For ToolCallStream, which
// streams a call's arguments as they arrive. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hichat::api {

enum class JsonScan { kComplete, kIncomplete, kInvalid };

// The first offset at or after `at` that is not JSON whitespace (text.size() if none).
size_t skip_json_space(std::string_view text, size_t at);

// The value that starts at text[at] (not whitespace): kComplete with `end` one past it; kInvalid with
// `end` at the first byte that no valid value could have there (every byte before it could begin one).
// Containers nest to any depth (scanned with an explicit stack). A number at the very end of `text` is
// kIncomplete (a digit may follow).
JsonScan scan_json_value(std::string_view text, size_t at, size_t& end);

// The string that starts at text[at] == '"': kComplete with `end` one past its closing quote and, when
// `decoded` is given, its contents with the escapes resolved (\uXXXX and surrogate pairs as UTF-8; a lone
// surrogate is invalid, as nlohmann has it);
// kInvalid with `end` as scan_json_value() gives it.
JsonScan scan_json_string(std::string_view text, size_t at, size_t& end, std::string* decoded = nullptr);

// JSON text piece by piece without the whitespace between its tokens (the spaces inside strings kept):
// the same bytes whether it comes in one piece or many.
class JsonCompactor {
public:
    void append(std::string_view piece, std::string& out);

private:
    bool in_string_ = false;
    bool escaped_ = false;
};

}  // namespace hichat::api
