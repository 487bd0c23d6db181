#include "tokenizer/template/string_methods.h"

#include <algorithm>
#include <utility>

#include "tokenizer/template/builtins.h"
#include "tokenizer/template/unicode_text.h"

namespace hichat::tokenizer::jinja {
namespace {

Value bound_method(std::string name, NativeFunction fn) { return Value::function(Function{std::move(name), std::move(fn), nullptr}); }

Result<Value> starts_or_ends_with(const std::string& s, const CallArgs& args, bool starts) {
    const auto test = [&](const std::string& p) {
        return p.size() <= s.size() && (starts ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
    };
    const char* name = starts ? "startswith" : "endswith";
    if (args.positional.empty()) return invalid_argument(std::string(name) + "() needs an argument");
    const Value& pattern = args.positional[0];
    if (pattern.is_string()) return Value::boolean(test(pattern.as_string()));
    if (pattern.is_list()) {
        for (const Value& p : pattern.as_list().items) {
            if (!p.is_string()) return invalid_argument(std::string(name) + "() tuple elements must be strings");
            if (test(p.as_string())) return Value::boolean(true);
        }
        return Value::boolean(false);
    }
    return invalid_argument(std::string(name) + "() argument must be a string or a tuple of strings");
}

// Python str.split(sep=None, maxsplit=-1) as the reference implements it.
Result<Value> split(const std::string& s, const CallArgs& args) {
    const Value* sep = args.get(0, "sep");
    const Value* maxsplit_arg = args.get(1, "maxsplit");
    if (sep && !sep->is_string() && !sep->is_none()) return invalid_argument("split() separator must be a string or none");
    if (maxsplit_arg && !maxsplit_arg->is_int()) return invalid_argument("split() maxsplit must be an int");
    const int64_t maxsplit = maxsplit_arg ? maxsplit_arg->as_int() : -1;
    std::vector<Value> parts;
    if (!sep || sep->is_none()) {
        const std::string_view text = js_trim_start(s);
        size_t pos = 0;
        while (pos < text.size()) {
            size_t end = pos;
            while (end < text.size() && js_space_length(text, end) == 0) decode_utf8(text, &end);
            if (maxsplit != -1 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                parts.push_back(Value::string(std::string(text.substr(pos))));
                break;
            }
            parts.push_back(Value::string(std::string(text.substr(pos, end - pos))));
            pos = end;
            while (size_t n = js_space_length(text, pos)) pos += n;
        }
        return Value::list(std::move(parts));
    }
    const std::string& d = sep->as_string();
    if (d.empty()) return invalid_argument("split() separator must not be empty");
    size_t begin = 0;
    while (true) {
        const size_t hit = s.find(d, begin);
        if (hit == std::string::npos || (maxsplit != -1 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
            parts.push_back(Value::string(s.substr(begin)));
            break;
        }
        parts.push_back(Value::string(s.substr(begin, hit - begin)));
        begin = hit + d.size();
    }
    return Value::list(std::move(parts));
}

Result<Value> replace(const std::string& s, const CallArgs& args) {
    if (args.positional.size() < 2) return invalid_argument("replace() needs two arguments");
    const Value& from = args.positional[0];
    const Value& to = args.positional[1];
    if (!from.is_string() || !to.is_string()) return invalid_argument("replace() arguments must be strings");
    const Value* count = args.get(2, "count");
    if (count && !count->is_int() && !count->is_none()) return invalid_argument("replace() count must be an int or none");
    const int64_t n = (count && count->is_int()) ? count->as_int() : -1;
    return Value::string(replace_all(s, from.as_string(), to.as_string(), n));
}

}  // namespace

std::string title_case(std::string_view s) {
    std::string out(s);
    for (size_t i = 0; i < out.size(); ++i)
        if (is_word_byte(out[i]) && (i == 0 || !is_word_byte(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z') out[i] -= 32;
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] -= 32;
    return out;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
    if (count == 0) return std::string(s);
    int64_t remaining = count < 0 ? INT64_MAX : count;
    std::string out;
    if (from.empty()) {  // matches before every code point and at the end
        for (std::string_view cp : split_code_points(s)) {
            if (remaining > 0) out += to, --remaining;
            out += cp;
        }
        if (remaining > 0) out += to;
        return out;
    }
    size_t begin = 0;
    while (remaining > 0) {
        const size_t hit = s.find(from, begin);
        if (hit == std::string_view::npos) break;
        out += s.substr(begin, hit - begin);
        out += to;
        begin = hit + from.size();
        --remaining;
    }
    out += s.substr(begin);
    return out;
}

Value string_method(const Value& receiver, std::string_view name) {
    const Value r = receiver;  // keeps the string alive inside the bound method
    const auto str = [r]() -> const std::string& { return r.as_string(); };
    const auto unary = [&](std::string (*fn)(std::string_view)) {
        return bound_method(std::string(name), [str, fn](const CallArgs&) -> Result<Value> { return Value::string(fn(str())); });
    };
    if (name == "upper") return unary(ascii_upper);
    if (name == "lower") return unary(ascii_lower);
    if (name == "title") return unary(title_case);
    if (name == "capitalize") return unary(capitalize);
    if (name == "strip") return unary([](std::string_view s) { return std::string(js_trim(s)); });
    if (name == "lstrip") return unary([](std::string_view s) { return std::string(js_trim_start(s)); });
    if (name == "rstrip") return unary([](std::string_view s) { return std::string(js_trim_end(s)); });
    if (name == "startswith" || name == "endswith") {
        const bool starts = name == "startswith";
        return bound_method(std::string(name), [str, starts](const CallArgs& a) { return starts_or_ends_with(str(), a, starts); });
    }
    if (name == "split") return bound_method("split", [str](const CallArgs& a) { return split(str(), a); });
    if (name == "replace") return bound_method("replace", [str](const CallArgs& a) { return replace(str(), a); });
    return Value();
}

Value dict_items(const Value& dict) {
    std::vector<Value> items;
    for (const auto& [k, v] : dict.as_dict().entries) items.push_back(Value::list({Value::string(k), v}));
    return Value::list(std::move(items));
}

Result<Value> dict_sort(const Value& dict, const CallArgs& args) {
    const Value* case_sensitive = args.get(0, "case_sensitive");
    const Value* by = args.get(1, "by");
    const Value* reverse = args.get(2, "reverse");
    if (case_sensitive && case_sensitive->kind() != ValueKind::kBool) return invalid_argument("dictsort case_sensitive must be a bool");
    if (reverse && reverse->kind() != ValueKind::kBool) return invalid_argument("dictsort reverse must be a bool");
    if (by && (!by->is_string() || (by->as_string() != "key" && by->as_string() != "value")))
        return invalid_argument("dictsort by must be 'key' or 'value'");
    const size_t index = (by && by->as_string() == "value") ? 1 : 0;
    std::vector<Value> items = dict_items(dict).as_list().items;
    Status error;
    std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
        Result<int> c = compare_values(a.as_list().items[index], b.as_list().items[index], case_sensitive && case_sensitive->as_bool());
        if (!c.ok()) error = c.status();
        const int order = c.ok() ? *c : 0;
        return (reverse && reverse->as_bool()) ? order > 0 : order < 0;
    });
    if (!error.ok()) return error;
    return Value::list(std::move(items));
}

Value dict_method(const Value& receiver, std::string_view name) {
    const Value d = receiver;
    if (name == "get") {
        return bound_method("get", [d](const CallArgs& a) -> Result<Value> {
            if (a.positional.empty() || !a.positional[0].is_string()) return invalid_argument("get() key must be a string");
            if (const Value* v = d.as_dict().find(a.positional[0].as_string())) return *v;
            return a.positional.size() > 1 ? a.positional[1] : Value::none();
        });
    }
    if (name == "items") return bound_method("items", [d](const CallArgs&) -> Result<Value> { return dict_items(d); });
    if (name == "keys" || name == "values") {
        const bool keys = name == "keys";
        return bound_method(std::string(name), [d, keys](const CallArgs&) -> Result<Value> {
            std::vector<Value> out;
            for (const auto& [k, v] : d.as_dict().entries) out.push_back(keys ? Value::string(k) : v);
            return Value::list(std::move(out));
        });
    }
    if (name == "dictsort") return bound_method("dictsort", [d](const CallArgs& a) { return dict_sort(d, a); });
    return Value();
}

}  // namespace hichat::tokenizer::jinja
