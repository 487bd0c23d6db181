// The built-in names of @huggingface/jinja: tests (`x is string`), attribute lookup with the methods of
// strings and dicts (`s.split(',')`, `d.items()`), and the global functions (namespace, range,
// raise_exception, strftime_now). Filters live in filters.h.
#pragma once

#include <ctime>
#include <optional>
#include <string_view>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace hichat::tokenizer::jinja {

// `operand is name`; `argument` is the second operand of equalto/eq (from selectattr), else null.
Result<bool> apply_test(std::string_view name, const Value& operand, const Value* argument);

// `object.key` / `object[key]`: dict entries, list and string indexing (negative counts from the end),
// bound string/dict methods, and `length` on lists and strings. Missing entries are undefined.
Result<Value> get_member(const Value& object, const Value& key);

// Dotted path lookup used by map(attribute=) and sort(attribute=): "a.b", "items.0".
Value get_attribute_path(const Value& item, std::string_view path);

// Orders two values for sort/dictsort: numbers (and bools) together, strings (optionally ignoring
// ASCII case), none with none; anything else fails.
Result<int> compare_values(const Value& a, const Value& b, bool case_sensitive);

// The globals every render starts with. strftime_now formats `local_time` when set, else the clock.
Dict make_globals(std::optional<std::tm> local_time);

}  // namespace hichat::tokenizer::jinja
