#include "model/json_fields.h"

#include <cmath>
#include <limits>

namespace hichat::model {

Result<Json> parse_json(const std::string& text, const std::string& file) {
    try {
        return Json::parse(text);
    } catch (const Json::exception& e) {
        return invalid_argument(file + ": bad JSON: " + e.what());
    }
}

bool json_to_int(const Json& v, int64_t* out) {
    if (v.is_number_integer()) {
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
        *out = v.get<int64_t>();
        return true;
    }
    if (v.is_number_float()) {
        double d = v.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
        *out = static_cast<int64_t>(d);
        return true;
    }
    return false;
}

bool JsonFields::has(std::string_view key) const { return find(key) != nullptr; }

bool JsonFields::contains(std::string_view key) const {
    return obj_.is_object() && obj_.find(key) != obj_.end();
}

const Json* JsonFields::find(std::string_view key) const {
    if (!obj_.is_object()) return nullptr;
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
}

Status JsonFields::error(std::string_view key, std::string_view what) const {
    return invalid_argument(file_ + ": field '" + field_name(key) + "' " + std::string(what));
}

Result<int64_t> JsonFields::get_int(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) return error(key, "is missing");
    int64_t n = 0;
    if (!json_to_int(*v, &n)) return error(key, "must be an integer, got " + v->dump());
    return n;
}

Result<int64_t> JsonFields::get_int_or(std::string_view key, int64_t fallback) const {
    if (!has(key)) return fallback;
    return get_int(key);
}

Result<int> JsonFields::get_positive_int(std::string_view key) const {
    Result<int64_t> n = get_int(key);
    if (!n.ok()) return n.status();
    if (*n < 1 || *n > std::numeric_limits<int32_t>::max()) {
        return error(key, "must be a positive integer, got " + std::to_string(*n));
    }
    return static_cast<int>(*n);
}

Result<double> JsonFields::get_number(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) return error(key, "is missing");
    if (!v->is_number()) return error(key, "must be a number, got " + v->dump());
    return v->get<double>();
}

Result<double> JsonFields::get_number_or(std::string_view key, double fallback) const {
    if (!has(key)) return fallback;
    return get_number(key);
}

Result<bool> JsonFields::get_bool_or(std::string_view key, bool fallback) const {
    const Json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return error(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
}

Result<std::string> JsonFields::get_string(std::string_view key) const {
    const Json* v = find(key);
    if (v == nullptr) return error(key, "is missing");
    if (!v->is_string()) return error(key, "must be a string, got " + v->dump());
    return v->get<std::string>();
}

Result<std::string> JsonFields::get_string_or(std::string_view key, std::string fallback) const {
    if (!has(key)) return fallback;
    return get_string(key);
}

}  // namespace hichat::model
