#include "grammar/json_schema_compiler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "grammar/char_regex.h"
#include "grammar/json_values.h"

namespace hichat::grammar {
namespace {

const std::set<std::string, std::less<>> kAnnotations = {
    "title", "description", "default", "examples", "$schema", "$id", "$comment", "readOnly", "writeOnly",
    "deprecated", "contentMediaType", "contentEncoding", "$defs", "definitions"};
const std::set<std::string, std::less<>> kSupported = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
    "additionalItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref"};
const char* kTypes[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

bool type_matches(const nlohmann::ordered_json& v, const std::string& type) {
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "number") return v.is_number();
    if (type == "integer") {
        return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    }
    return false;
}

}  // namespace

JsonSchemaCompiler::JsonSchemaCompiler(const Json& root, const JsonSchemaOptions& options,
                                       std::chrono::steady_clock::time_point deadline)
    : root_(root), options_(options), deadline_(deadline) {
    if (options.max_whitespace > 0) {
        ByteSet ws;
        for (char c : {' ', '\n', '\r', '\t'}) ws.add(static_cast<uint8_t>(c));
        ws_ = re_repeat(re_byte_set(ws), 0, options.max_whitespace);
    } else {
        ws_ = re_empty();
    }
}

Result<GrammarIr> JsonSchemaCompiler::run() {
    const int32_t root = ir_.new_rule("root");
    if (!options_.frame) {
        ir_.define(root, value(root_, "", 0));
    } else {
        const JsonFrame& f = *options_.frame;
        const int32_t item = ir_.new_rule("value");
        ir_.define(item, value(root_, "", 0));
        auto text = [&](const std::string& t) { return t.empty() ? ir_.empty() : ir_.literal(t); };
        const ExprId more = ir_.repeat(ir_.seq({text(f.separator), ir_.ref(item)}), std::max(f.min_values - 1, 0),
                                       f.max_values < 0 ? -1 : std::max(f.max_values - 1, 0));
        ir_.define(root, ir_.seq({text(f.begin), ir_.ref(item), more, text(f.end)}));
    }
    ir_.set_root(root);
    if (!error_.ok()) return error_;
    return std::move(ir_);
}

ExprId JsonSchemaCompiler::fail(std::string message) {
    if (error_.ok()) error_ = invalid_argument(std::move(message));
    return ir_.nothing();
}

ExprId JsonSchemaCompiler::token(std::string_view text) { return ir_.lexeme(re_concat({ws_, re_literal(text)})); }

ExprId JsonSchemaCompiler::string_lexeme(std::vector<Regex> contents) {
    LexemeSpec spec;
    for (Regex& c : contents) spec.all_of.push_back(re_concat({ws_, re_byte('"'), std::move(c), re_byte('"')}));
    return ir_.lexeme(std::move(spec));
}

ExprId JsonSchemaCompiler::any_value() {
    if (any_rule_ >= 0) return ir_.ref(any_rule_);
    any_rule_ = ir_.new_rule("any");
    const ExprId v = ir_.ref(any_rule_);
    const ExprId str = string_lexeme({re_repeat(json_string_char(), 0, -1)});
    const ExprId kv = ir_.seq({str, token(":"), v});
    const ExprId obj = ir_.seq({token("{"), ir_.optional(ir_.seq({kv, ir_.repeat(ir_.seq({token(","), kv}), 0, -1)})),
                                token("}")});
    const ExprId arr = ir_.seq({token("["), ir_.optional(ir_.seq({v, ir_.repeat(ir_.seq({token(","), v}), 0, -1)})),
                                token("]")});
    auto num = parse_regex("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", false, 10);
    const ExprId number = ir_.lexeme(re_concat({ws_, to_utf8_regex(num.value())}));
    ir_.define(any_rule_, ir_.alt({obj, arr, str, number, token("true"), token("false"), token("null")}));
    return v;
}

bool JsonSchemaCompiler::check_keywords(const Json& s, const std::string& ptr) {
    for (auto it = s.begin(); it != s.end(); ++it) {
        if (kAnnotations.count(it.key()) || kSupported.count(it.key())) continue;
        fail("unsupported JSON Schema keyword '" + it.key() + "' at " + (ptr.empty() ? "/" : ptr));
        return false;
    }
    return true;
}

std::optional<int> JsonSchemaCompiler::count_keyword(const Json& s, const char* key, const std::string& ptr) {
    auto it = s.find(key);
    if (it == s.end()) return std::nullopt;
    double v = it->is_number() ? it->get<double>() : -1;
    if (v < 0 || std::floor(v) != v) {
        fail("'" + std::string(key) + "' at " + ptr + " must be a non-negative integer");
        return std::nullopt;
    }
    if (v > options_.limits.max_repeat) {
        fail("'" + std::string(key) + "' at " + ptr + " is " + it->dump() + ", over the supported bound of " +
             std::to_string(options_.limits.max_repeat));
        return std::nullopt;
    }
    return static_cast<int>(v);
}

ExprId JsonSchemaCompiler::value(const Json& s, const std::string& ptr, int depth) {
    if (!error_.ok()) return ir_.nothing();
    if (depth > options_.limits.max_nesting_depth) {
        return fail("schema nested deeper than " + std::to_string(options_.limits.max_nesting_depth) + " at " + ptr);
    }
    if (std::chrono::steady_clock::now() > deadline_) return fail("grammar compilation exceeded its time budget");
    if (s.is_boolean()) return s.get<bool>() ? any_value() : ir_.nothing();
    if (!s.is_object()) return fail("schema at " + (ptr.empty() ? "/" : ptr) + " must be an object or a boolean");
    if (!check_keywords(s, ptr)) return ir_.nothing();
    if (s.contains("$ref")) {
        for (auto it = s.begin(); it != s.end(); ++it) {
            if (it.key() != "$ref" && !kAnnotations.count(it.key())) {
                return fail("'$ref' with the sibling keyword '" + it.key() + "' at " + ptr + " is not supported");
            }
        }
        if (!s["$ref"].is_string()) return fail("'$ref' at " + ptr + " must be a string");
        return reference(s["$ref"].get<std::string>(), ptr, depth);
    }
    if (s.contains("allOf")) {
        const Json& all = s["allOf"];
        if (!all.is_array() || all.empty()) return fail("'allOf' at " + ptr + " must be a non-empty array");
        Json merged = s;
        merged.erase("allOf");
        for (size_t i = 0; i < all.size(); ++i) {
            if (!merge_into(merged, all[i], ptr + "/allOf/" + std::to_string(i))) return ir_.nothing();
        }
        return value(merged, ptr, depth + 1);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) {
        if (s.contains("anyOf") && s.contains("oneOf")) return fail("'anyOf' with 'oneOf' at " + ptr + " is not supported");
        const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
        const Json& options = s[key];
        if (!options.is_array() || options.empty()) return fail("'" + std::string(key) + "' at " + ptr + " must be a non-empty array");
        Json base = s;
        base.erase(key);
        bool has_base = false;
        for (auto it = base.begin(); it != base.end(); ++it) has_base = has_base || !kAnnotations.count(it.key());
        std::vector<ExprId> alts;
        for (size_t i = 0; i < options.size(); ++i) {
            const std::string sub_ptr = ptr + "/" + key + "/" + std::to_string(i);
            if (!has_base) {
                alts.push_back(value(options[i], sub_ptr, depth + 1));
                continue;
            }
            Json merged = base;
            if (!merge_into(merged, options[i], sub_ptr)) return ir_.nothing();
            alts.push_back(value(merged, sub_ptr, depth + 1));
        }
        return ir_.alt(std::move(alts));
    }
    if (s.contains("enum") || s.contains("const")) return literal_values(s, ptr);
    return typed_value(s, ptr, depth);
}

ExprId JsonSchemaCompiler::typed_value(const Json& s, const std::string& ptr, int depth) {
    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
        const Json list = it->is_array() ? *it : Json::array({*it});
        for (const Json& t : list) {
            const bool known = t.is_string() && std::find(std::begin(kTypes), std::end(kTypes), t.get<std::string>()) != std::end(kTypes);
            if (!known) return fail("'type' at " + ptr + " has an unknown type " + t.dump());
            types.push_back(t.get<std::string>());
        }
    } else {
        types.assign(std::begin(kTypes), std::end(kTypes));
    }
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<ExprId> alts;
    for (const std::string& t : std::set<std::string>(types.begin(), types.end())) {
        if (t == "null") alts.push_back(token("null"));
        else if (t == "boolean") alts.push_back(ir_.alt({token("true"), token("false")}));
        else if (t == "string") alts.push_back(string_value(s, ptr));
        else if (t == "number") alts.push_back(number_value(s, ptr, false));
        else if (t == "integer" && !has_number) alts.push_back(number_value(s, ptr, true));
        else if (t == "object") alts.push_back(object_value(s, ptr, depth));
        else if (t == "array") alts.push_back(array_value(s, ptr, depth));
    }
    return ir_.alt(std::move(alts));
}

ExprId JsonSchemaCompiler::literal_values(const Json& s, const std::string& ptr) {
    for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string& k = it.key();
        if (k != "enum" && k != "const" && k != "type" && !kAnnotations.count(k)) {
            return fail("'" + std::string(s.contains("enum") ? "enum" : "const") + "' together with '" + k + "' at " +
                        ptr + " is not supported");
        }
    }
    std::vector<Json> values;
    if (s.contains("enum")) {
        if (!s["enum"].is_array()) return fail("'enum' at " + ptr + " must be an array");
        values.assign(s["enum"].begin(), s["enum"].end());
    }
    if (s.contains("const")) {
        if (s.contains("enum")) {
            const Json c = s["const"];
            const bool in = std::find(values.begin(), values.end(), c) != values.end();
            values = in ? std::vector<Json>{c} : std::vector<Json>{};
        } else {
            values = {s["const"]};
        }
    }
    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
        for (const Json& t : it->is_array() ? *it : Json::array({*it})) {
            if (t.is_string()) types.push_back(t.get<std::string>());
        }
    }
    std::vector<ExprId> alts;
    for (const Json& v : values) {
        const bool typed = types.empty() || std::any_of(types.begin(), types.end(), [&](const std::string& t) {
                               return type_matches(v, t) || (t == "number" && v.is_number());
                           });
        if (!typed) continue;
        alts.push_back(token(v.dump()));
        // JSON Schema compares numbers by value: 1 and 1.0 are the same.
        if (v.is_number_integer()) alts.push_back(token(v.dump() + ".0"));
    }
    return ir_.alt(std::move(alts));
}

ExprId JsonSchemaCompiler::string_value(const Json& s, const std::string& ptr) {
    std::vector<Regex> contents;
    const auto min = count_keyword(s, "minLength", ptr);
    const auto max = count_keyword(s, "maxLength", ptr);
    if (!error_.ok()) return ir_.nothing();
    contents.push_back(re_repeat(json_string_char(), min.value_or(0), max ? *max : -1));
    if (auto it = s.find("pattern"); it != s.end()) {
        if (!it->is_string()) return fail("'pattern' at " + ptr + " must be a string");
        auto re = parse_regex(it->get<std::string>(), true, options_.limits.max_repeat);
        if (!re.ok()) return fail("'pattern' at " + ptr + ": " + re.status().message());
        contents.push_back(to_json_string_regex(re.value()));
    }
    if (auto it = s.find("format"); it != s.end()) {
        if (!it->is_string()) return fail("'format' at " + ptr + " must be a string");
        const auto pattern = format_pattern(it->get<std::string>());
        if (!pattern) return fail("unsupported format '" + it->get<std::string>() + "' at " + ptr);
        auto re = parse_regex(*pattern, false, options_.limits.max_repeat);
        if (!re.ok()) return fail("internal: format pattern: " + re.status().message());
        contents.push_back(to_json_string_regex(re.value()));
    }
    // The plain length regex is implied by the others when no length is given.
    if (contents.size() > 1 && !min && !max) contents.erase(contents.begin());
    return string_lexeme(std::move(contents));
}

ExprId JsonSchemaCompiler::number_value(const Json& s, const std::string& ptr, bool integer) {
    constexpr double kLimit = 1e18;
    struct Bound {
        double value;
        bool exclusive;
    };
    std::optional<Bound> lo, hi;
    auto read = [&](const char* key, bool exclusive, std::optional<Bound>& out, bool lower) {
        auto it = s.find(key);
        if (it == s.end()) return;
        if (it->is_boolean()) {  // draft 4: exclusiveMinimum: true modifies minimum
            if (it->get<bool>() && out) out->exclusive = true;
            return;
        }
        if (!it->is_number()) {
            fail("'" + std::string(key) + "' at " + ptr + " must be a number");
            return;
        }
        const Bound b{it->get<double>(), exclusive};
        if (!out || (lower ? (b.value > out->value || (b.value == out->value && exclusive))
                           : (b.value < out->value || (b.value == out->value && exclusive)))) {
            out = b;
        }
    };
    read("minimum", false, lo, true);
    read("maximum", false, hi, false);
    read("exclusiveMinimum", true, lo, true);
    read("exclusiveMaximum", true, hi, false);
    if (!error_.ok()) return ir_.nothing();
    for (const auto* b : {&lo, &hi}) {
        if (*b && std::fabs((*b)->value) > kLimit) {
            return fail("number bound " + Json((*b)->value).dump() + " at " + ptr + " is beyond +-1e18");
        }
    }
    std::string pattern;
    if (integer) {
        std::optional<int64_t> ilo, ihi;
        if (lo) ilo = static_cast<int64_t>(lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value));
        if (hi) ihi = static_cast<int64_t>(hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value));
        if (ilo && ihi && *ilo > *ihi) return ir_.nothing();
        const std::string digits = integer_range_pattern(ilo, ihi);
        if (digits.empty()) return ir_.nothing();
        pattern = "(?:" + digits + ")" + (options_.integers_with_zero_fraction ? "(?:\\.0)?" : "");
    } else if (!lo && !hi) {
        pattern = "-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?";
    } else {
        std::optional<NumberBound> nlo, nhi;
        for (auto [b, n, key] : {std::tuple{&lo, &nlo, "minimum"}, std::tuple{&hi, &nhi, "maximum"}}) {
            if (!*b) continue;
            if (std::floor((*b)->value) != (*b)->value) {
                return fail("number bound " + Json((*b)->value).dump() + " (" + key + ") at " + ptr +
                            " is not supported: only integer bounds on numbers");
            }
            *n = NumberBound{static_cast<int64_t>((*b)->value), (*b)->exclusive};
        }
        pattern = number_range_pattern(nlo, nhi);
        if (pattern.empty()) return ir_.nothing();
    }
    auto re = parse_regex(pattern, false, options_.limits.max_repeat);
    if (!re.ok()) return fail("internal: number pattern: " + re.status().message());
    return ir_.lexeme(re_concat({ws_, to_utf8_regex(re.value())}));
}

}  // namespace hichat::grammar
