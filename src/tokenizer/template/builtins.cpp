#include "tokenizer/template/builtins.h"

#include <string>
#include <utility>

#include "tokenizer/template/string_methods.h"
#include "tokenizer/template/unicode_text.h"
#include "tokenizer/template/value_format.h"

namespace hichat::tokenizer::jinja {
namespace {

Value native(std::string name, NativeFunction fn) { return Value::function(Function{std::move(name), std::move(fn), nullptr}); }

bool same_case(const Value& v, bool upper) {
    if (!v.is_string()) return false;
    return v.as_string() == (upper ? ascii_upper(v.as_string()) : ascii_lower(v.as_string()));
}

}  // namespace

Result<bool> apply_test(std::string_view name, const Value& v, const Value* argument) {
    const ValueKind k = v.kind();
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return k == ValueKind::kBool;
    if (name == "true") return k == ValueKind::kBool && v.as_bool();
    if (name == "false") return k == ValueKind::kBool && !v.as_bool();
    if (name == "callable") return k == ValueKind::kFunction;
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_int();
    if (name == "iterable") return (v.is_list() && !v.is_tuple()) || v.is_string();
    if (name == "mapping") return v.is_dict();
    if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
    if (name == "lower") return same_case(v, false);
    if (name == "upper") return same_case(v, true);
    if (name == "odd" || name == "even") {
        if (!v.is_int()) return invalid_argument("test '" + std::string(name) + "' needs an int, got " + v.type_name());
        return (v.as_int() % 2 != 0) == (name == "odd");
    }
    if (name == "equalto" || name == "eq") return argument ? strict_equals(v, *argument) : v.is_undefined();
    return invalid_argument("unknown test '" + std::string(name) + "'");
}

Result<Value> get_member(const Value& object, const Value& key) {
    if (object.is_attribute_container()) {
        if (!key.is_string()) return invalid_argument(std::string("cannot index a ") + object.type_name() + " with a " + key.type_name());
        if (const Value* v = object.as_dict().find(key.as_string())) return *v;
        if (object.is_dict()) return dict_method(object, key.as_string());
        return Value();
    }
    if (object.is_list() || object.is_string()) {
        if (key.is_int()) {
            if (object.is_list()) {
                const auto& items = object.as_list().items;
                const int64_t n = static_cast<int64_t>(items.size());
                const int64_t i = key.as_int() < 0 ? key.as_int() + n : key.as_int();
                return (i >= 0 && i < n) ? items[i] : Value();
            }
            const auto chars = split_code_points(object.as_string());
            const int64_t n = static_cast<int64_t>(chars.size());
            const int64_t i = key.as_int() < 0 ? key.as_int() + n : key.as_int();
            return (i >= 0 && i < n) ? Value::string(std::string(chars[i])) : Value();
        }
        if (!key.is_string()) return invalid_argument(std::string("cannot index a ") + object.type_name() + " with a " + key.type_name());
        if (key.as_string() == "length") {
            return Value::integer(object.is_list() ? static_cast<int64_t>(object.as_list().items.size())
                                                   : utf16_length(object.as_string()));
        }
        return object.is_string() ? string_method(object, key.as_string()) : Value();
    }
    if (!key.is_string()) return invalid_argument(std::string("cannot index a ") + object.type_name() + " with a " + key.type_name());
    return Value();  // other types have no attributes
}

Value get_attribute_path(const Value& item, std::string_view path) {
    Value value = item;
    size_t begin = 0;
    while (true) {
        const size_t dot = path.find('.', begin);
        const std::string part(path.substr(begin, dot == std::string_view::npos ? std::string_view::npos : dot - begin));
        if (value.is_attribute_container()) {
            const Value* v = value.as_dict().find(part);
            value = v ? *v : Value();
        } else if (value.is_list()) {
            // parseInt(part): leading digits; no digits -> NaN -> undefined.
            size_t num_digits = 0;
            while (num_digits < part.size() && part[num_digits] >= '0' && part[num_digits] <= '9') ++num_digits;
            const auto& items = value.as_list().items;
            if (num_digits == 0 || num_digits > 9) return Value();
            const size_t index = std::stoul(part.substr(0, num_digits));
            if (index >= items.size()) return Value();
            value = items[index];
        } else {
            return Value();
        }
        if (dot == std::string_view::npos) return value;
        begin = dot + 1;
    }
}

Result<int> compare_values(const Value& a, const Value& b, bool case_sensitive) {
    const auto numeric = [](const Value& v) { return v.is_number() || v.kind() == ValueKind::kBool; };
    if ((a.is_none() && b.is_none()) || (a.is_undefined() && b.is_undefined())) return 0;
    if (numeric(a) && numeric(b)) {
        const double x = a.as_double(), y = b.as_double();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) {
        const std::string x = case_sensitive ? a.as_string() : ascii_lower(a.as_string());
        const std::string y = case_sensitive ? b.as_string() : ascii_lower(b.as_string());
        return x < y ? -1 : x > y ? 1 : 0;
    }
    return invalid_argument(std::string("cannot compare ") + a.type_name() + " with " + b.type_name());
}

namespace {

Result<Value> make_namespace(const CallArgs& args) {
    if (args.positional.size() > 1) return invalid_argument("namespace() takes at most 1 positional argument");
    Dict entries;
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        if (source.is_dict()) {
            for (const auto& [k, v] : source.as_dict().entries) entries.set(k, v);
        } else if (source.is_list()) {
            for (const Value& pair : source.as_list().items) {
                if (!pair.is_list() || pair.as_list().items.size() != 2 || !pair.as_list().items[0].is_string())
                    return invalid_argument("namespace() expects a dict or a list of [key, value] pairs");
                entries.set(pair.as_list().items[0].as_string(), pair.as_list().items[1]);
            }
        } else {
            return invalid_argument(std::string("namespace() cannot take a ") + source.type_name());
        }
    }
    for (const auto& [k, v] : args.keyword) entries.set(k, v);
    return Value::name_space(std::move(entries));
}

Result<Value> range(const CallArgs& args) {
    constexpr int64_t kMaxItems = 1 << 20;
    for (const Value& v : args.positional)
        if (!v.is_int()) return invalid_argument(std::string("range() needs int arguments, got ") + v.type_name());
    if (args.positional.empty() || args.positional.size() > 3) return invalid_argument("range() takes 1 to 3 arguments");
    int64_t start = 0, stop = args.positional[0].as_int(), step = 1;
    if (args.positional.size() >= 2) start = args.positional[0].as_int(), stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
    if (step == 0) return invalid_argument("range() step must not be zero");
    std::vector<Value> items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (static_cast<int64_t>(items.size()) >= kMaxItems) return invalid_argument("range() is too long");
        items.push_back(Value::integer(i));
    }
    return Value::list(std::move(items));
}

// The reference's strftime: %Y %m %d %b %B %H %M %% (English month names); other codes stay as written.
std::string format_time(std::string_view format, const std::tm& t) {
    static const char* kMonths[] = {"January", "February", "March", "April", "May", "June", "July",
                                    "August", "September", "October", "November", "December"};
    const auto pad2 = [](int n) { return (n < 10 ? "0" : "") + std::to_string(n); };
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        const char c = i + 1 < format.size() ? format[i + 1] : '\0';
        if (format[i] != '%' || std::string_view("YmdbBHM%").find(c) == std::string_view::npos || c == '\0') {
            out += format[i];
            continue;
        }
        const std::string month = kMonths[t.tm_mon % 12];
        switch (c) {
            case 'Y': out += std::to_string(t.tm_year + 1900); break;
            case 'm': out += pad2(t.tm_mon + 1); break;
            case 'd': out += pad2(t.tm_mday); break;
            case 'b': out += month.substr(0, 3); break;
            case 'B': out += month; break;
            case 'H': out += pad2(t.tm_hour); break;
            case 'M': out += pad2(t.tm_min); break;
            default: out += '%'; break;
        }
        ++i;
    }
    return out;
}

}  // namespace

Dict make_globals(std::optional<std::tm> local_time) {
    Dict g;
    g.set("false", Value::boolean(false));
    g.set("true", Value::boolean(true));
    g.set("none", Value::none());
    g.set("False", Value::boolean(false));
    g.set("True", Value::boolean(true));
    g.set("None", Value::none());
    g.set("namespace", native("namespace", make_namespace));
    g.set("range", native("range", range));
    g.set("raise_exception", native("raise_exception", [](const CallArgs& args) -> Result<Value> {
        Result<std::string> text = args.positional.empty() ? Result<std::string>(std::string()) : to_js_string(args.positional[0]);
        return invalid_argument("raise_exception: " + (text.ok() ? *text : std::string()));
    }));
    g.set("strftime_now", native("strftime_now", [local_time](const CallArgs& args) -> Result<Value> {
        if (args.positional.empty() || !args.positional[0].is_string())
            return invalid_argument("strftime_now() needs a format string");
        std::tm t{};
        if (local_time) {
            t = *local_time;
        } else {
            const std::time_t now = std::time(nullptr);
            localtime_r(&now, &t);
        }
        return Value::string(format_time(args.positional[0].as_string(), t));
    }));
    return g;
}

}  // namespace hichat::tokenizer::jinja
