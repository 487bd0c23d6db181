// Methods callable on strings and dicts (`s.startswith('x')`, `d.get('k')`), bound to their receiver,
// with @huggingface/jinja's semantics. Note its strip/lstrip/rstrip ignore a `chars` argument and remove
// JS whitespace, unlike Python; we match the reference.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/template/value.h"

namespace hichat::tokenizer::jinja {

// The bound method, or undefined when strings / dicts have no method of that name.
Value string_method(const Value& receiver, std::string_view name);
Value dict_method(const Value& receiver, std::string_view name);

// Shared with filters.
std::string title_case(std::string_view s);      // upper-cases each word's first [A-Za-z0-9_] byte
std::string capitalize(std::string_view s);      // first character upper-cased, rest unchanged
std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count);  // count < 0: all
Value dict_items(const Value& dict);             // [[key, value], ...]
Result<Value> dict_sort(const Value& dict, const CallArgs& args);

}  // namespace hichat::tokenizer::jinja
