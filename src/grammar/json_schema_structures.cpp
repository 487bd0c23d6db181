// JsonSchemaCompiler: objects, arrays, $ref and allOf merging.
#include <algorithm>
#include <set>

#include "grammar/json_schema_compiler.h"
#include "grammar/json_values.h"

namespace hichat::grammar {
namespace {

std::string escape_pointer_token(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

}  // namespace

ExprId JsonSchemaCompiler::object_value(const Json& s, const std::string& ptr, int depth) {
    struct Property {
        std::string name;
        ExprId value;
        bool required;
    };
    std::set<std::string> required;
    if (auto it = s.find("required"); it != s.end()) {
        if (!it->is_array()) return fail("'required' at " + ptr + " must be an array of strings");
        for (const Json& r : *it) {
            if (!r.is_string()) return fail("'required' at " + ptr + " must be an array of strings");
            required.insert(r.get<std::string>());
        }
    }
    std::vector<Property> props;
    std::set<std::string> declared;
    if (auto it = s.find("properties"); it != s.end()) {
        if (!it->is_object()) return fail("'properties' at " + ptr + " must be an object");
        for (auto p = it->begin(); p != it->end(); ++p) {
            const ExprId v = value(p.value(), ptr + "/properties/" + escape_pointer_token(p.key()), depth + 1);
            props.push_back({p.key(), v, required.count(p.key()) > 0});
            declared.insert(p.key());
        }
    }
    // additionalProperties: false, a schema, or absent (true unless strict).
    std::optional<ExprId> extra;
    auto ap = s.find("additionalProperties");
    if (ap != s.end()) {
        if (!(ap->is_boolean() && !ap->get<bool>())) extra = value(*ap, ptr + "/additionalProperties", depth + 1);
    } else if (!options_.strict_additional_properties) {
        extra = any_value();
    }
    for (const std::string& name : required) {
        if (declared.count(name)) continue;
        if (!extra) return ir_.nothing();  // a required key that may not appear
        props.push_back({name, *extra, true});
        declared.insert(name);
    }
    auto kv = [&](const std::string& name, ExprId v) { return ir_.seq({token(Json(name).dump()), token(":"), v}); };
    ExprId tail_first = ir_.empty(), tail_more = ir_.empty();
    if (extra) {
        LexemeSpec key;
        key.all_of.push_back(re_concat({ws_, re_byte('"'), re_repeat(json_string_char(), 0, -1), re_byte('"')}));
        for (const std::string& name : declared) key.none_of.push_back(re_concat({ws_, re_literal(Json(name).dump())}));
        const ExprId kv_extra = ir_.seq({ir_.lexeme(std::move(key)), token(":"), *extra});
        const ExprId more = ir_.repeat(ir_.seq({token(","), kv_extra}), 0, -1);
        tail_more = more;
        tail_first = ir_.optional(ir_.seq({kv_extra, more}));
    }
    // first_i: properties i.. when none came before; more_i: when some did (each needs a comma).
    ExprId first = tail_first, more = tail_more;
    for (size_t k = props.size(); k-- > 0;) {
        const int32_t first_rule = ir_.new_rule("obj_first"), more_rule = ir_.new_rule("obj_more");
        const ExprId pair = kv(props[k].name, props[k].value);
        ir_.define(more_rule, ir_.alt({ir_.seq({token(","), pair, more}), props[k].required ? ir_.nothing() : more}));
        ir_.define(first_rule, ir_.alt({ir_.seq({pair, more}), props[k].required ? ir_.nothing() : first}));
        first = ir_.ref(first_rule);
        more = ir_.ref(more_rule);
    }
    return ir_.seq({token("{"), first, token("}")});
}

ExprId JsonSchemaCompiler::array_value(const Json& s, const std::string& ptr, int depth) {
    std::vector<ExprId> prefix;
    std::optional<ExprId> rest;  // nullopt: any value
    auto items = s.find("items");
    auto prefix_items = s.find("prefixItems");
    const Json* rest_schema = nullptr;
    std::string rest_ptr;
    auto add_prefix = [&](const Json& list, const std::string& list_ptr) {
        for (size_t i = 0; i < list.size(); ++i) prefix.push_back(value(list[i], list_ptr + "/" + std::to_string(i), depth + 1));
    };
    if (prefix_items != s.end()) {
        if (!prefix_items->is_array()) return fail("'prefixItems' at " + ptr + " must be an array");
        add_prefix(*prefix_items, ptr + "/prefixItems");
        if (items != s.end()) rest_schema = &*items, rest_ptr = ptr + "/items";
    } else if (items != s.end() && items->is_array()) {  // draft 7 tuple form
        add_prefix(*items, ptr + "/items");
        if (auto ai = s.find("additionalItems"); ai != s.end()) rest_schema = &*ai, rest_ptr = ptr + "/additionalItems";
    } else if (items != s.end()) {
        rest_schema = &*items, rest_ptr = ptr + "/items";
    }
    if (rest_schema != nullptr) rest = value(*rest_schema, rest_ptr, depth + 1);
    const auto min = count_keyword(s, "minItems", ptr);
    const auto max = count_keyword(s, "maxItems", ptr);
    if (!error_.ok()) return ir_.nothing();
    const ExprId rest_expr = rest ? *rest : any_value();
    return ir_.seq({token("["), array_elements(prefix, rest_expr, min.value_or(0), max ? *max : -1, 1), token("]")});
}

// The elements from `position` (1-based) on: prefix schemas first, then `rest`, count in [min, max].
ExprId JsonSchemaCompiler::array_elements(const std::vector<ExprId>& prefix, ExprId rest, int min, int max,
                                          int position) {
    if (max >= 0 && position > max) return ir_.empty();
    const bool first = position == 1;
    const ExprId sep = first ? ir_.empty() : token(",");
    if (position <= static_cast<int>(prefix.size())) {
        const ExprId here = ir_.seq({sep, prefix[position - 1], array_elements(prefix, rest, min, max, position + 1)});
        return position > min ? ir_.alt({ir_.empty(), here}) : here;
    }
    const int lo = std::max(0, min - (position - 1));
    const int hi = max < 0 ? -1 : max - (position - 1);
    const ExprId item = ir_.seq({token(","), rest});
    if (!first) return ir_.repeat(item, lo, hi);
    const ExprId some = ir_.seq({rest, ir_.repeat(item, std::max(lo - 1, 0), hi < 0 ? -1 : hi - 1)});
    return lo == 0 ? ir_.alt({ir_.empty(), some}) : some;
}

const JsonSchemaCompiler::Json* JsonSchemaCompiler::resolve(const std::string& ref, std::string& target_ptr) {
    if (ref.empty() || ref[0] != '#') return nullptr;
    std::string pointer;
    for (size_t i = 1; i < ref.size(); ++i) {
        if (ref[i] == '%' && i + 2 < ref.size()) {
            pointer += static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            pointer += ref[i];
        }
    }
    if (!pointer.empty() && pointer[0] != '/') return nullptr;
    try {
        const Json& target = root_.at(Json::json_pointer(pointer));
        target_ptr = pointer;
        return &target;
    } catch (const std::exception&) {
        return nullptr;
    }
}

ExprId JsonSchemaCompiler::reference(const std::string& ref, const std::string& ptr, int depth) {
    std::string target_ptr;
    const Json* target = resolve(ref, target_ptr);
    if (target == nullptr) {
        return fail("unsupported or unresolvable $ref '" + ref + "' at " + ptr + " (only local '#/...' pointers)");
    }
    auto it = ref_rules_.find(target_ptr);
    if (it != ref_rules_.end()) return ir_.ref(it->second);
    const int32_t rule = ir_.new_rule("ref " + target_ptr);
    ref_rules_.emplace(target_ptr, rule);
    ir_.define(rule, value(*target, target_ptr, depth + 1));
    return ir_.ref(rule);
}

// Merges one allOf / anyOf subschema into `into`: keywords apart are combined, `required` unites,
// `properties` merge (a shared name becomes an allOf), `type` intersects, min/max take the tighter
// bound; any other keyword present in both with different values is refused.
bool JsonSchemaCompiler::merge_into(Json& into, const Json& sub_in, const std::string& ptr) {
    Json sub = sub_in;
    while (sub.is_object() && sub.contains("$ref") && sub.size() == 1) {
        std::string target_ptr;
        const Json* target = resolve(sub["$ref"].get<std::string>(), target_ptr);
        if (target == nullptr) {
            fail("unsupported or unresolvable $ref '" + sub["$ref"].dump() + "' at " + ptr);
            return false;
        }
        if (target->is_object() && target->contains("$ref") && *target == sub) break;
        sub = *target;
    }
    if (sub.is_boolean()) {
        if (!sub.get<bool>()) into = Json(false);
        return true;
    }
    if (!into.is_object()) return true;  // already false
    if (!sub.is_object()) {
        fail("schema at " + ptr + " must be an object or a boolean");
        return false;
    }
    if (!check_keywords(sub, ptr)) return false;
    static const std::set<std::string> kLower = {"minLength", "minItems", "minimum", "exclusiveMinimum"};
    static const std::set<std::string> kUpper = {"maxLength", "maxItems", "maximum", "exclusiveMaximum"};
    for (auto it = sub.begin(); it != sub.end(); ++it) {
        const std::string& k = it.key();
        if (k == "title" || k == "description" || k == "default" || k == "examples" || k == "$comment") continue;
        if (!into.contains(k) || into[k] == it.value()) {
            into[k] = it.value();
        } else if (k == "required" && into[k].is_array() && it->is_array()) {
            for (const Json& r : *it) {
                if (std::find(into[k].begin(), into[k].end(), r) == into[k].end()) into[k].push_back(r);
            }
        } else if (k == "properties" && into[k].is_object() && it->is_object()) {
            for (auto p = it->begin(); p != it->end(); ++p) {
                if (into[k].contains(p.key())) into[k][p.key()] = Json{{"allOf", Json::array({into[k][p.key()], p.value()})}};
                else into[k][p.key()] = p.value();
            }
        } else if (k == "type") {
            auto as_list = [](const Json& t) { return t.is_array() ? t : Json::array({t}); };
            Json both = Json::array();
            for (const Json& a : as_list(into[k])) {
                for (const Json& b : as_list(*it)) {
                    if (a == b || (a == "number" && b == "integer")) both.push_back(b);
                    else if (a == "integer" && b == "number") both.push_back(a);
                }
            }
            if (both.empty()) {
                into = Json(false);
                return true;
            }
            into[k] = both;
        } else if ((kLower.count(k) || kUpper.count(k)) && into[k].is_number() && it->is_number()) {
            const bool take = kLower.count(k) ? it->get<double>() > into[k].get<double>() : it->get<double>() < into[k].get<double>();
            if (take) into[k] = it.value();
        } else if (k == "items" || k == "additionalProperties") {
            into[k] = Json{{"allOf", Json::array({into[k], it.value()})}};
        } else {
            fail("'allOf' / 'anyOf' with '" + k + "' in more than one subschema at " + ptr + " is not supported");
            return false;
        }
    }
    return true;
}

}  // namespace hichat::grammar
