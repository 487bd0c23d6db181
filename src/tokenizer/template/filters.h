// `value | name` and `value | name(args)` with @huggingface/jinja's per-type filter tables. Which filters
// exist depends on the operand's type (e.g. `length` works on strings, lists and dicts, `trim` only on
// strings), as in the reference; an unknown combination is an error.
#pragma once

#include <string_view>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace hichat::tokenizer::jinja {

// `args` is null when the filter is written without parentheses.
Result<Value> apply_filter(std::string_view name, const Value& operand, const CallArgs* args);

}  // namespace hichat::tokenizer::jinja
