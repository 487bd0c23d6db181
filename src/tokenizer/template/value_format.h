// Turning values into text exactly as @huggingface/jinja does: how `{{ v }}` prints, how JS stringifies a
// value for `+`, `~` and `join`, and the `tojson` serializer (Python json.dumps layout).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace hichat::tokenizer::jinja {

std::string format_js_number(double d);   // JS Number.prototype.toString: 0.1, 1e+21, 1.5e-7, NaN
std::string format_float_value(double d); // a float as `{{ }}` prints it: integral values get ".0"

// What `{{ v }}` and `| string` print (RuntimeValue.toString): none -> "null", containers -> JSON.
// Fails for callables.
Result<std::string> to_display_string(const Value& v);
// JS `payload.toString()` as used by `+`, `~` and `join`: floats print as JS numbers ("1", not "1.0"),
// lists join their elements' display strings with ",", dicts print "[object Map]", none/undefined "".
Result<std::string> to_js_string(const Value& v);

struct JsonOptions {
    int indent = 0;               // 0: one line; else newline + `indent` spaces per level
    bool ensure_ascii = false;    // escape code units >= 0x7F as \uXXXX
    bool sort_keys = false;
    std::optional<std::pair<std::string, std::string>> separators;  // (item, key); default ", "/": "
};
// `tojson`. undefined prints as null (or as "undefined" inside display strings). Fails for callables.
Result<std::string> to_json(const Value& v, const JsonOptions& options, bool undefined_as_null = true);
// JSON.stringify of a string, quotes included.
void append_json_string(std::string_view s, bool ensure_ascii, std::string& out);

}  // namespace hichat::tokenizer::jinja
