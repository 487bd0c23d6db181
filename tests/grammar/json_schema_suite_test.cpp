// The JSON Schema compiler against the JSON-Schema-Test-Suite (Debian json-schema-test-suite,
// draft 7): for each file of a supported keyword, each schema either compiles (then every valid
// instance, serialized compactly with its keys in schema order, is accepted byte by byte and ends
// accepting, and every invalid instance is rejected) or is refused with a documented error.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema_test_support.h"

namespace hichat::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Keyword files we do not support at all, by name (docs/grammar.md): every schema there is refused.
const std::set<std::string> kUnsupportedFiles = {
    "contains.json", "dependencies.json", "if-then-else.json", "maxProperties.json", "minProperties.json",
    "multipleOf.json", "not.json", "patternProperties.json", "propertyNames.json", "refRemote.json",
    "uniqueItems.json"};
// oneOf is compiled as anyOf: an instance valid under two branches is accepted (counted apart).
const std::string kOneOfFile = "oneOf.json";

bool is_documented_refusal(const std::string& m) {
    for (const char* s : {"unsupported JSON Schema keyword", "is not supported", "unsupported format",
                          "unsupported or unresolvable $ref", "only integer bounds", "beyond +-1e18"}) {
        if (m.find(s) != std::string::npos) return true;
    }
    return false;
}

// Property names in the order the schema (with its $ref targets and subschemas) declares them.
void schema_key_order(const Json& root, const Json& s, std::vector<std::string>& order, int depth) {
    if (!s.is_object() || depth > 8) return;
    if (auto it = s.find("$ref"); it != s.end() && it->is_string() && it->get<std::string>().rfind("#", 0) == 0) {
        try {
            schema_key_order(root, root.at(Json::json_pointer(it->get<std::string>().substr(1))), order, depth + 1);
        } catch (const std::exception&) {
        }
    }
    if (auto it = s.find("properties"); it != s.end() && it->is_object()) {
        for (auto p = it->begin(); p != it->end(); ++p) {
            if (std::find(order.begin(), order.end(), p.key()) == order.end()) order.push_back(p.key());
        }
    }
    if (auto it = s.find("required"); it != s.end() && it->is_array()) {
        for (const Json& r : *it) {
            if (r.is_string() && std::find(order.begin(), order.end(), r.get<std::string>()) == order.end()) {
                order.push_back(r.get<std::string>());
            }
        }
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
        if (auto it = s.find(key); it != s.end() && it->is_array()) {
            for (const Json& sub : *it) schema_key_order(root, sub, order, depth + 1);
        }
    }
    // A const / enum object is one literal: its own key order.
    std::vector<const Json*> literals;
    if (auto it = s.find("const"); it != s.end()) literals.push_back(&*it);
    if (auto it = s.find("enum"); it != s.end() && it->is_array()) {
        for (const Json& v : *it) literals.push_back(&v);
    }
    for (const Json* v : literals) {
        if (!v->is_object()) continue;
        for (auto p = v->begin(); p != v->end(); ++p) {
            if (std::find(order.begin(), order.end(), p.key()) == order.end()) order.push_back(p.key());
        }
    }
}

// The subschemas that may govern a property / an array element (for nested reordering).
const Json* sub_for(const Json& root, const Json& s, const std::string& key, int depth) {
    if (!s.is_object() || depth > 8) return nullptr;
    if (auto it = s.find("properties"); it != s.end() && it->is_object() && it->contains(key)) return &(*it)[key];
    if (auto it = s.find("$ref"); it != s.end() && it->is_string() && it->get<std::string>().rfind("#", 0) == 0) {
        try {
            if (auto r = sub_for(root, root.at(Json::json_pointer(it->get<std::string>().substr(1))), key, depth + 1)) return r;
        } catch (const std::exception&) {
        }
    }
    for (const char* k : {"allOf", "anyOf", "oneOf"}) {
        if (auto it = s.find(k); it != s.end() && it->is_array()) {
            for (const Json& sub : *it) {
                if (auto r = sub_for(root, sub, key, depth + 1)) return r;
            }
        }
    }
    return nullptr;
}

Json reorder(const Json& root, const Json* s, const Json& v) {
    if (v.is_array()) {
        Json out = Json::array();
        for (size_t i = 0; i < v.size(); ++i) {
            const Json* item = nullptr;
            if (s && s->is_object()) {
                if (auto it = s->find("items"); it != s->end()) item = it->is_array() ? (i < it->size() ? &(*it)[i] : nullptr) : &*it;
            }
            out.push_back(reorder(root, item, v[i]));
        }
        return out;
    }
    if (!v.is_object()) return v;
    std::vector<std::string> order;
    if (s) schema_key_order(root, *s, order, 0);
    Json out = Json::object();
    auto put = [&](const std::string& k) {
        const Json* sub = s ? sub_for(root, *s, k, 0) : nullptr;
        out[k] = reorder(root, sub, v[k]);
    };
    for (const std::string& k : order) {
        if (v.contains(k)) put(k);
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!out.contains(it.key())) put(it.key());
    }
    return out;
}

const JsonSchemaOptions kAsWritten = {.integers_with_zero_fraction = true};

struct Counts {
    int schemas_compiled = 0, schemas_refused = 0;
    int valid_accepted = 0, invalid_rejected = 0;
    int oneof_overlap_accepted = 0;
    std::vector<std::string> misjudged;
};

TEST(JsonSchemaSuite, Draft7SupportedKeywords) {
    const std::filesystem::path dir = HICHAT_SCHEMA_SUITE_DIR;
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " missing: apt-get install json-schema-test-suite";
    Counts c;
    int files = 0;
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() == ".json") paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const auto& path : paths) {
        const std::string name = path.filename().string();
        if (kUnsupportedFiles.count(name)) continue;
        ++files;
        std::ifstream in(path);
        const Json groups = Json::parse(in);
        for (const Json& group : groups) {
            const std::string where = name + ": " + group["description"].get<std::string>();
            // The suite's instances as written: 1.0 is an integer there.
            auto g = compile_json_schema_value(group["schema"], kAsWritten);
            if (!g.ok()) {
                EXPECT_TRUE(is_documented_refusal(g.status().message())) << where << ": " << g.status().message();
                std::printf("refused: %s: %s\n", where.c_str(), g.status().message().c_str());
                ++c.schemas_refused;
                continue;
            }
            ++c.schemas_compiled;
            for (const Json& t : group["tests"]) {
                const bool valid = t["valid"].get<bool>();
                const std::string ordered = reorder(group["schema"], &group["schema"], t["data"]).dump();
                const bool accepted = test::accepts_bytewise(g.value(), ordered) ||
                                      test::accepts_bytewise(g.value(), t["data"].dump());
                if (valid && accepted) {
                    ++c.valid_accepted;
                } else if (!valid && !accepted) {
                    ++c.invalid_rejected;
                } else if (!valid && name == kOneOfFile) {
                    ++c.oneof_overlap_accepted;
                } else {
                    c.misjudged.push_back(where + " / " + t["description"].get<std::string>() + " (" +
                                          (valid ? "valid, rejected" : "invalid, accepted") + "): " + ordered);
                }
            }
        }
    }
    std::printf("JSON-Schema-Test-Suite draft7: %d files (%zu skipped by name), schemas compiled %d / refused %d, "
                "valid instances accepted %d, invalid rejected %d, oneOf overlaps accepted (oneOf = anyOf) %d, "
                "misjudged %zu\n",
                files, kUnsupportedFiles.size(), c.schemas_compiled, c.schemas_refused, c.valid_accepted,
                c.invalid_rejected, c.oneof_overlap_accepted, c.misjudged.size());
    for (const std::string& m : c.misjudged) ADD_FAILURE() << m;
    EXPECT_GT(c.schemas_compiled, 60);
}

}  // namespace
}  // namespace hichat::grammar
