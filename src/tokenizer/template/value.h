// A dynamic Jinja value, modelled on @huggingface/jinja's runtime values so that rendering is
// byte-identical to it: undefined, none, bool, int, float, string, list, dict (insertion-ordered),
// namespace (a mutable attribute bag made by namespace()) and callable.
// Lists, dicts and namespaces are shared by reference like JS objects: copying a Value aliases them, and
// `==` between two of them compares identity. Not thread-safe; each render owns its values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace hichat::tokenizer::jinja {

class Value;
struct MacroStmt;  // ast.h

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction };

struct List {
    std::vector<Value> items;
    bool tuple = false;  // from a `(a, b)` literal: not `iterable`, no JSON form, as in the reference
};

// Keeps insertion order, like a JS Map. Lookups are linear: chat-template dicts are small.
struct Dict {
    std::vector<std::pair<std::string, Value>> entries;

    const Value* find(std::string_view key) const;
    void set(std::string_view key, Value value);  // replaces in place, or appends
};

// Arguments of one call: positional first, then keyword arguments in source order.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    const Value* keyword_arg(std::string_view name) const;
    // Positional argument `index` if given, else keyword argument `name`, else nullptr.
    const Value* get(size_t index, std::string_view name) const;
};

using NativeFunction = std::function<Result<Value>(const CallArgs& args)>;

struct Function {
    std::string name;                  // for error messages
    NativeFunction native;             // set for built-ins and bound methods
    const MacroStmt* macro = nullptr;  // set for template macros; owned by the parsed template
};

class Value {
public:
    Value() = default;  // undefined
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value floating(double d);
    static Value string(std::string s);
    static Value list(std::vector<Value> items = {});
    static Value tuple(std::vector<Value> items);
    static Value dict(Dict d = {});
    static Value name_space(Dict d = {});
    static Value function(Function f);
    // JSON input as @huggingface/jinja converts JS values: integral numbers become ints, object keys that
    // look like array indices come first in ascending order (JS property order), the rest keep their order.
    static Value from_json(const nlohmann::ordered_json& j);

    ValueKind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
    bool is_none() const { return kind_ == ValueKind::kNone; }
    bool is_string() const { return kind_ == ValueKind::kString; }
    bool is_int() const { return kind_ == ValueKind::kInt; }
    bool is_number() const { return kind_ == ValueKind::kInt || kind_ == ValueKind::kFloat; }
    bool is_list() const { return kind_ == ValueKind::kList; }  // tuples included
    bool is_tuple() const { return kind_ == ValueKind::kList && list_->tuple; }
    bool is_dict() const { return kind_ == ValueKind::kDict; }
    bool is_attribute_container() const { return kind_ == ValueKind::kDict || kind_ == ValueKind::kNamespace; }

    bool as_bool() const { return bool_; }
    int64_t as_int() const { return int_; }
    double as_double() const;  // int, float or bool as a JS number
    const std::string& as_string() const { return *string_; }
    const List& as_list() const { return *list_; }
    const Dict& as_dict() const { return *dict_; }  // dict or namespace
    Dict& mutable_dict() const { return *dict_; }
    const Function& as_function() const { return *function_; }

    bool truthy() const;               // Python truthiness as @huggingface/jinja implements it
    const void* identity() const;      // the shared object behind a list/dict/namespace/function
    const char* type_name() const;     // for error messages: "string", "list", ...

private:
    ValueKind kind_ = ValueKind::kUndefined;
    bool bool_ = false;
    int64_t int_ = 0;
    double float_ = 0;
    std::shared_ptr<const std::string> string_;
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<const Function> function_;
};

// JS `a == b` on the runtime values' payloads (@huggingface/jinja compares `left.value == right.value`).
bool loose_equals(const Value& a, const Value& b);
// JS `a === b` on the payloads (used by `in` on lists, `equalto`, `unique`).
bool strict_equals(const Value& a, const Value& b);

}  // namespace hichat::tokenizer::jinja
