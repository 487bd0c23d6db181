#include "tokenizer/template/value.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tokenizer/template/unicode_text.h"
#include "tokenizer/template/value_format.h"

namespace hichat::tokenizer::jinja {

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : entries)
        if (k == key) return &v;
    return nullptr;
}

void Dict::set(std::string_view key, Value value) {
    for (auto& [k, v] : entries) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::string(key), std::move(value));
}

const Value* CallArgs::keyword_arg(std::string_view name) const {
    for (const auto& [k, v] : keyword)
        if (k == name) return &v;
    return nullptr;
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
    if (index < positional.size()) return &positional[index];
    return keyword_arg(name);
}

Value Value::none() {
    Value v;
    v.kind_ = ValueKind::kNone;
    return v;
}

Value Value::boolean(bool b) {
    Value v;
    v.kind_ = ValueKind::kBool;
    v.bool_ = b;
    return v;
}

Value Value::integer(int64_t i) {
    Value v;
    v.kind_ = ValueKind::kInt;
    v.int_ = i;
    return v;
}

Value Value::floating(double d) {
    Value v;
    v.kind_ = ValueKind::kFloat;
    v.float_ = d;
    return v;
}

Value Value::string(std::string s) {
    Value v;
    v.kind_ = ValueKind::kString;
    v.string_ = std::make_shared<const std::string>(std::move(s));
    return v;
}

Value Value::list(std::vector<Value> items) {
    Value v;
    v.kind_ = ValueKind::kList;
    v.list_ = std::make_shared<List>(List{std::move(items)});
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.list_->tuple = true;
    return v;
}

Value Value::dict(Dict d) {
    Value v;
    v.kind_ = ValueKind::kDict;
    v.dict_ = std::make_shared<Dict>(std::move(d));
    return v;
}

Value Value::name_space(Dict d) {
    Value v = dict(std::move(d));
    v.kind_ = ValueKind::kNamespace;
    return v;
}

Value Value::function(Function f) {
    Value v;
    v.kind_ = ValueKind::kFunction;
    v.function_ = std::make_shared<const Function>(std::move(f));
    return v;
}

namespace {

// Canonical array index ("0", "17", not "017"), which JS orders before other object keys.
bool is_array_index(const std::string& key) {
    if (key.empty() || key.size() > 10 || (key.size() > 1 && key[0] == '0')) return false;
    for (char c : key)
        if (c < '0' || c > '9') return false;
    return std::stoull(key) < 4294967295ull;
}

Value dict_from_json(const nlohmann::ordered_json& j) {
    Dict d;
    std::vector<std::pair<uint64_t, std::string>> index_keys;
    for (const auto& [key, _] : j.items())
        if (is_array_index(key)) index_keys.emplace_back(std::stoull(key), key);
    std::sort(index_keys.begin(), index_keys.end());
    // JSON object keys are unique, so entries can be appended without a lookup.
    for (const auto& [_, key] : index_keys) d.entries.emplace_back(key, Value::from_json(j.at(key)));
    for (const auto& [key, value] : j.items())
        if (!is_array_index(key)) d.entries.emplace_back(key, Value::from_json(value));
    return Value::dict(std::move(d));
}

}  // namespace

Value Value::from_json(const nlohmann::ordered_json& j) {
    using Type = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case Type::null: return none();
        case Type::boolean: return boolean(j.get<bool>());
        case Type::number_integer: return integer(j.get<int64_t>());
        case Type::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            return u <= uint64_t{INT64_MAX} ? integer(static_cast<int64_t>(u)) : floating(static_cast<double>(u));
        }
        case Type::number_float: {
            const double d = j.get<double>();
            // JS has one number type; Number.isInteger() decides IntegerValue vs FloatValue.
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return integer(static_cast<int64_t>(d));
            return floating(d);
        }
        case Type::string: return string(j.get<std::string>());
        case Type::array: {
            std::vector<Value> items;
            for (const auto& item : j) items.push_back(from_json(item));
            return list(std::move(items));
        }
        case Type::object: return dict_from_json(j);
        default: return Value();  // binary / discarded: no JS counterpart
    }
}

double Value::as_double() const {
    switch (kind_) {
        case ValueKind::kInt: return static_cast<double>(int_);
        case ValueKind::kFloat: return float_;
        case ValueKind::kBool: return bool_ ? 1.0 : 0.0;
        default: return std::nan("");
    }
}

bool Value::truthy() const {
    switch (kind_) {
        case ValueKind::kUndefined:
        case ValueKind::kNone: return false;
        case ValueKind::kBool: return bool_;
        case ValueKind::kInt: return int_ != 0;
        case ValueKind::kFloat: return float_ != 0 && !std::isnan(float_);
        case ValueKind::kString: return !string_->empty();
        case ValueKind::kList: return !list_->items.empty();
        case ValueKind::kDict: return !dict_->entries.empty();
        case ValueKind::kNamespace:  // a JS Map object is always truthy
        case ValueKind::kFunction: return true;
    }
    return false;
}

const void* Value::identity() const {
    switch (kind_) {
        case ValueKind::kList: return list_.get();
        case ValueKind::kDict:
        case ValueKind::kNamespace: return dict_.get();
        case ValueKind::kFunction: return function_.get();
        default: return nullptr;
    }
}

const char* Value::type_name() const {
    switch (kind_) {
        case ValueKind::kUndefined: return "undefined";
        case ValueKind::kNone: return "none";
        case ValueKind::kBool: return "bool";
        case ValueKind::kInt: return "int";
        case ValueKind::kFloat: return "float";
        case ValueKind::kString: return "string";
        case ValueKind::kList: return list_->tuple ? "tuple" : "list";
        case ValueKind::kDict: return "dict";
        case ValueKind::kNamespace: return "namespace";
        case ValueKind::kFunction: return "callable";
    }
    return "?";
}

namespace {

bool is_object(const Value& v) { return v.identity() != nullptr; }
bool is_nullish(const Value& v) { return v.is_undefined() || v.is_none(); }
bool is_js_number(const Value& v) { return v.is_number(); }

// JS ToNumber(string): decimal literal (with exponent), Infinity, 0x/0o/0b integers, surrounding whitespace.
double js_string_to_number(std::string_view s) {
    s = js_trim(s);
    if (s.empty()) return 0;
    if (s == "Infinity" || s == "+Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' || s[1] == 'b' || s[1] == 'B')) {
        const int base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
        double n = 0;
        for (char c : s.substr(2)) {
            const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : 99;
            if (d >= base) return std::nan("");
            n = n * base + d;
        }
        return n;
    }
    size_t i = 0, num_digits = 0;
    if (s[i] == '+' || s[i] == '-') ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++num_digits;
    if (i < s.size() && s[i] == '.') {
        ++i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++num_digits;
    }
    if (num_digits == 0) return std::nan("");
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        size_t num_exp_digits = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++num_exp_digits;
        if (num_exp_digits == 0) return std::nan("");
    }
    if (i != s.size()) return std::nan("");
    return std::strtod(std::string(s).c_str(), nullptr);
}

// JS ToPrimitive for our objects: arrays join their elements, Maps print "[object Map]".
Value to_primitive(const Value& v) {
    Result<std::string> s = to_js_string(v);
    return Value::string(s.ok() ? *s : std::string());
}

}  // namespace

bool loose_equals(const Value& a, const Value& b) {
    if (is_nullish(a) || is_nullish(b)) return is_nullish(a) && is_nullish(b);
    if (a.kind() == ValueKind::kBool && b.kind() == ValueKind::kBool) return a.as_bool() == b.as_bool();
    if (a.kind() == ValueKind::kBool) return loose_equals(Value::floating(a.as_double()), b);
    if (b.kind() == ValueKind::kBool) return loose_equals(a, Value::floating(b.as_double()));
    if (is_object(a) && is_object(b)) return a.identity() == b.identity();
    if (is_object(a)) return loose_equals(to_primitive(a), b);
    if (is_object(b)) return loose_equals(a, to_primitive(b));
    if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
    if (is_js_number(a) && is_js_number(b)) {
        if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
        return a.as_double() == b.as_double();
    }
    if (a.is_string()) return js_string_to_number(a.as_string()) == b.as_double();
    return a.as_double() == js_string_to_number(b.as_string());
}

bool strict_equals(const Value& a, const Value& b) {
    if (is_js_number(a) && is_js_number(b)) {
        if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
        return a.as_double() == b.as_double();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case ValueKind::kUndefined:
        case ValueKind::kNone: return true;
        case ValueKind::kBool: return a.as_bool() == b.as_bool();
        case ValueKind::kString: return a.as_string() == b.as_string();
        default: return a.identity() == b.identity();
    }
}

}  // namespace hichat::tokenizer::jinja
