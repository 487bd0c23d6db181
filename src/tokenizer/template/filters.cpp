#include "tokenizer/template/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "tokenizer/template/builtins.h"
#include "tokenizer/template/string_methods.h"
#include "tokenizer/template/unicode_text.h"
#include "tokenizer/template/value_format.h"

namespace hichat::tokenizer::jinja {
namespace {

Status unknown(std::string_view name, const Value& operand) {
    return invalid_argument("filter '" + std::string(name) + "' cannot be applied to a " + operand.type_name());
}

Result<Value> string_value(Result<std::string> s) {
    if (!s.ok()) return s.status();
    return Value::string(std::move(*s));
}

// JS parseInt(s, 10) / parseFloat(s); nullopt for NaN.
std::optional<double> parse_js_number(const std::string& s, bool integer) {
    const std::string_view t = js_trim_start(s);
    const std::string str(t);
    char* end = nullptr;
    if (integer) {
        size_t i = (!str.empty() && (str[0] == '+' || str[0] == '-')) ? 1 : 0;
        const size_t digits_begin = i;
        while (i < str.size() && str[i] >= '0' && str[i] <= '9') ++i;
        if (i == digits_begin) return std::nullopt;
        return std::trunc(std::strtod(str.substr(0, i).c_str(), nullptr));
    }
    if (str.rfind("Infinity", 0) == 0 || str.rfind("+Infinity", 0) == 0) return INFINITY;
    if (str.rfind("-Infinity", 0) == 0) return -INFINITY;
    if (str.empty() || !(std::isdigit(static_cast<unsigned char>(str[0])) || str[0] == '.' || str[0] == '-' || str[0] == '+'))
        return std::nullopt;
    if (str.size() > 1 && (str[1] == 'x' || str[1] == 'X' || str[1] == 'n' || str[1] == 'N' || str[1] == 'i' || str[1] == 'I'))
        return str[0] == '0' ? std::optional<double>(0) : std::nullopt;  // parseFloat stops at 'x'; no inf/nan words
    const double d = std::strtod(str.c_str(), &end);
    if (end == str.c_str()) return std::nullopt;
    return d;
}

Value number_value(double d, bool integer) {
    if (integer && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::integer(static_cast<int64_t>(d));
    return Value::floating(d);
}

Result<Value> to_json_filter(const Value& operand, const CallArgs* args) {
    JsonOptions opt;
    if (args) {
        if (const Value* indent = args->keyword_arg("indent"); indent && !indent->is_none()) {
            if (!indent->is_int()) return invalid_argument("tojson indent must be an int");
            opt.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
        }
        if (const Value* v = args->keyword_arg("ensure_ascii")) {
            if (v->kind() != ValueKind::kBool) return invalid_argument("tojson ensure_ascii must be a bool");
            opt.ensure_ascii = v->as_bool();
        }
        if (const Value* v = args->keyword_arg("sort_keys")) {
            if (v->kind() != ValueKind::kBool) return invalid_argument("tojson sort_keys must be a bool");
            opt.sort_keys = v->as_bool();
        }
        if (const Value* v = args->keyword_arg("separators"); v && !v->is_none()) {
            const auto* items = v->is_list() ? &v->as_list().items : nullptr;
            if (!items || items->size() != 2 || !(*items)[0].is_string() || !(*items)[1].is_string())
                return invalid_argument("tojson separators must be a pair of strings");
            opt.separators = std::make_pair((*items)[0].as_string(), (*items)[1].as_string());
        }
    }
    return string_value(to_json(operand, opt));
}

Result<Value> join_filter(const Value& operand, const CallArgs* args) {
    const Value* sep = args ? args->get(0, "separator") : nullptr;
    if (sep && !sep->is_string()) return invalid_argument("join separator must be a string");
    const std::string separator = sep ? sep->as_string() : "";
    std::string out;
    if (operand.is_string()) {
        const auto chars = split_code_points(operand.as_string());
        for (size_t i = 0; i < chars.size(); ++i) out += (i ? separator : "") + std::string(chars[i]);
        return Value::string(std::move(out));
    }
    if (!operand.is_list()) return unknown("join", operand);
    const auto& items = operand.as_list().items;
    for (size_t i = 0; i < items.size(); ++i) {
        Result<std::string> s = to_js_string(items[i]);
        if (!s.ok()) return s.status();
        if (i > 0) out += separator;
        out += *s;
    }
    return Value::string(std::move(out));
}

Result<Value> sort_list(const Value& operand, const CallArgs* args) {
    const Value* reverse = args ? args->get(0, "reverse") : nullptr;
    const Value* case_sensitive = args ? args->get(1, "case_sensitive") : nullptr;
    const Value* attribute = args ? args->get(2, "attribute") : nullptr;
    if ((reverse && reverse->kind() != ValueKind::kBool) || (case_sensitive && case_sensitive->kind() != ValueKind::kBool))
        return invalid_argument("sort reverse and case_sensitive must be bools");
    std::string path;
    if (attribute && !attribute->is_none()) {
        if (!attribute->is_string() && !attribute->is_int()) return invalid_argument("sort attribute must be a string or int");
        path = attribute->is_int() ? std::to_string(attribute->as_int()) : attribute->as_string();
    }
    const auto key = [&](const Value& v) { return path.empty() ? v : get_attribute_path(v, path); };
    std::vector<Value> items = operand.as_list().items;
    Status error;
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
        Result<int> c = compare_values(key(a), key(b), case_sensitive && case_sensitive->as_bool());
        if (!c.ok()) error = c.status();
        const int order = c.ok() ? *c : 0;
        return (reverse && reverse->as_bool()) ? order > 0 : order < 0;
    });
    if (!error.ok()) return error;
    return Value::list(std::move(items));
}

Result<Value> select_attr(const Value& operand, const CallArgs& args, bool select) {
    const char* name = select ? "selectattr" : "rejectattr";
    for (const Value& item : operand.as_list().items)
        if (!item.is_attribute_container()) return invalid_argument(std::string(name) + " needs a list of dicts");
    for (const Value& a : args.positional)
        if (!a.is_string()) return invalid_argument(std::string(name) + " arguments must be strings");
    if (args.positional.empty() || !args.keyword.empty()) return invalid_argument(std::string(name) + " takes (attribute[, test[, value]])");
    const std::string& attr = args.positional[0].as_string();
    const Value* test = args.positional.size() > 1 ? &args.positional[1] : nullptr;
    const Value* test_arg = args.positional.size() > 2 ? &args.positional[2] : nullptr;
    std::vector<Value> kept;
    for (const Value& item : operand.as_list().items) {
        const Value* v = item.as_dict().find(attr);
        bool result = false;
        if (v && test) {
            Result<bool> r = apply_test(test->as_string(), *v, test_arg);
            if (!r.ok()) return r.status();
            result = *r;
        } else if (v) {
            result = v->truthy();
        }
        if (result == select) kept.push_back(item);
    }
    return Value::list(std::move(kept));
}

Result<Value> map_attr(const Value& operand, const CallArgs& args) {
    const Value* attr = args.keyword_arg("attribute");
    if (!attr) return invalid_argument("map is only supported with attribute=");
    if (!attr->is_string()) return invalid_argument("map attribute must be a string");
    const Value* fallback = args.keyword_arg("default");
    std::vector<Value> out;
    for (const Value& item : operand.as_list().items) {
        if (!item.is_attribute_container()) return invalid_argument("map needs a list of dicts");
        Value v = get_attribute_path(item, attr->as_string());
        out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::list(std::move(out));
}

Result<Value> list_filter(std::string_view name, const Value& operand, const CallArgs* args) {
    const auto& items = operand.as_list().items;
    if (name == "sort") return sort_list(operand, args);
    if (args) {
        if (name == "selectattr" || name == "rejectattr") return select_attr(operand, *args, name == "selectattr");
        if (name == "map") return map_attr(operand, *args);
        return unknown(name, operand);
    }
    if (name == "list") return operand;
    if (name == "first") return items.empty() ? Value() : items.front();
    if (name == "last") return items.empty() ? Value() : items.back();
    if (name == "length") return Value::integer(static_cast<int64_t>(items.size()));
    if (name == "reverse") return Value::list(std::vector<Value>(items.rbegin(), items.rend()));
    if (name == "string") return string_value(to_json(operand, JsonOptions{}, false));
    if (name == "unique") {
        std::vector<Value> out;
        for (const Value& v : items)
            if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return strict_equals(o, v); })) out.push_back(v);
        return Value::list(std::move(out));
    }
    return unknown(name, operand);
}

Result<Value> indent(const std::string& s, const CallArgs* args) {
    const Value* width = args ? args->get(0, "width") : nullptr;
    const Value* first = args ? args->get(1, "first") : nullptr;
    const Value* blank = args ? args->get(2, "blank") : nullptr;
    if (width && !width->is_int()) return invalid_argument("indent width must be an int");
    const std::string pad(width ? static_cast<size_t>(std::clamp<int64_t>(width->as_int(), 0, 1024)) : 4, ' ');
    std::string out;
    size_t begin = 0;
    for (size_t line = 0;; ++line) {
        const size_t end = s.find('\n', begin);
        const std::string_view text = std::string_view(s).substr(begin, end == std::string::npos ? std::string::npos : end - begin);
        const bool skip = (line == 0 && !(first && first->truthy())) || (text.empty() && !(blank && blank->truthy()));
        if (!skip) out += pad;
        out += text;
        if (end == std::string::npos) break;
        out += '\n';
        begin = end + 1;
    }
    return Value::string(std::move(out));
}

Result<Value> string_filter(std::string_view name, const Value& operand, const CallArgs* args) {
    const std::string& s = operand.as_string();
    if (name == "indent") return indent(s, args);
    if (args) {
        if (name != "replace") return unknown(name, operand);
        return string_method(operand, "replace").as_function().native(*args);
    }
    if (name == "length") return Value::integer(utf16_length(s));
    if (name == "upper") return Value::string(ascii_upper(s));
    if (name == "lower") return Value::string(ascii_lower(s));
    if (name == "title") return Value::string(title_case(s));
    if (name == "capitalize") return Value::string(capitalize(s));
    if (name == "trim") return Value::string(std::string(js_trim(s)));
    if (name == "string") return operand;
    if (name == "int" || name == "float") {
        const std::optional<double> d = parse_js_number(s, name == "int");
        return number_value(d.value_or(0), name == "int");
    }
    return unknown(name, operand);
}

Result<Value> scalar_filter(std::string_view name, const Value& operand) {
    if (operand.is_number()) {
        if (name == "abs") return operand.is_int() ? Value::integer(std::llabs(operand.as_int())) : Value::floating(std::fabs(operand.as_double()));
        if (name == "int") return operand.is_int() ? operand : number_value(std::floor(operand.as_double()), true);
        if (name == "float") return Value::floating(operand.as_double());
        if (name == "string") return string_value(to_display_string(operand));
    } else if (operand.kind() == ValueKind::kBool) {
        if (name == "bool") return operand;
        if (name == "int") return Value::integer(operand.as_bool() ? 1 : 0);
        if (name == "float") return Value::floating(operand.as_bool() ? 1.0 : 0.0);
        if (name == "string") return Value::string(operand.as_bool() ? "true" : "false");
    } else if (operand.is_dict()) {
        if (name == "items") return dict_items(operand);
        if (name == "length") return Value::integer(static_cast<int64_t>(operand.as_dict().entries.size()));
        const Value method = dict_method(operand, name);
        if (!method.is_undefined()) return method.as_function().native(CallArgs{});
    }
    return unknown(name, operand);
}

// Filters written with parentheses that do not depend on the operand's type.
Result<Value> called_generic_filter(std::string_view name, const Value& operand, const CallArgs& args, bool* handled) {
    *handled = true;
    if (name == "tojson") return to_json_filter(operand, &args);
    if (name == "join") return join_filter(operand, &args);
    if (name == "default") {
        const Value fallback = args.positional.empty() ? Value::string("") : args.positional[0];
        const Value* boolean = args.get(1, "boolean");
        if (boolean && boolean->kind() != ValueKind::kBool) return invalid_argument("default boolean flag must be a bool");
        if (operand.is_undefined() || (boolean && boolean->as_bool() && !operand.truthy())) return fallback;
        return operand;
    }
    if (name == "int" || name == "float") {
        const bool integer = name == "int";
        const Value* fallback = args.get(0, "default");
        if (operand.is_string()) {
            const std::optional<double> d = parse_js_number(operand.as_string(), integer);
            if (!d) return fallback ? *fallback : number_value(0, integer);
            return number_value(*d, integer);
        }
        if (operand.is_number()) return operand;
        if (operand.kind() == ValueKind::kBool) return number_value(operand.as_bool() ? 1 : 0, integer);
        return unknown(name, operand);
    }
    *handled = false;
    return Value();
}

}  // namespace

Result<Value> apply_filter(std::string_view name, const Value& operand, const CallArgs* args) {
    if (name == "safe") return operand;
    if (!args && name == "tojson") return to_json_filter(operand, nullptr);
    if (!args && name == "join") {
        if (operand.is_list()) return join_filter(operand, nullptr);
        if (operand.is_string()) return operand;
    }
    if (args) {
        bool handled = false;
        Result<Value> r = called_generic_filter(name, operand, *args, &handled);
        if (handled) return r;
    }
    if (operand.is_list()) return list_filter(name, operand, args);
    if (operand.is_string()) return string_filter(name, operand, args);
    if (args) {
        if (operand.is_dict()) {
            const Value method = dict_method(operand, name);
            if (!method.is_undefined()) return method.as_function().native(*args);
        }
        return unknown(name, operand);
    }
    return scalar_filter(name, operand);
}

}  // namespace hichat::tokenizer::jinja
