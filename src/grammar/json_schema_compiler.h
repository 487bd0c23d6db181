// JsonSchemaCompiler: JSON Schema (the subset of docs/grammar.md) -> GrammarIr. Keys come out in
// schema order, required ones always, optional ones maybe, additional ones after the declared;
// oneOf is taken as anyOf; allOf is merged keyword by keyword or refused. Any other keyword is an
// error naming it and its JSON pointer. One compilation per object; one thread.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/grammar_ir.h"

namespace hichat::grammar {

class JsonSchemaCompiler {
public:
    JsonSchemaCompiler(const nlohmann::ordered_json& root, const JsonSchemaOptions& options,
                       std::chrono::steady_clock::time_point deadline);
    // The IR with its root rule set, or the first error.
    Result<GrammarIr> run();

private:
    using Json = nlohmann::ordered_json;

    ExprId value(const Json& s, const std::string& ptr, int depth);
    ExprId typed_value(const Json& s, const std::string& ptr, int depth);
    ExprId literal_values(const Json& s, const std::string& ptr);
    ExprId string_value(const Json& s, const std::string& ptr);
    ExprId number_value(const Json& s, const std::string& ptr, bool integer);
    ExprId object_value(const Json& s, const std::string& ptr, int depth);
    ExprId array_value(const Json& s, const std::string& ptr, int depth);
    ExprId array_elements(const std::vector<ExprId>& prefix, ExprId rest, int min, int max, int position);
    ExprId reference(const std::string& ref, const std::string& ptr, int depth);
    bool merge_into(Json& into, const Json& sub, const std::string& ptr);
    const Json* resolve(const std::string& ref, std::string& target_ptr);
    bool check_keywords(const Json& s, const std::string& ptr);
    std::optional<int> count_keyword(const Json& s, const char* key, const std::string& ptr);

    ExprId token(std::string_view text);  // a punctuation or literal lexeme (with the whitespace prefix)
    ExprId string_lexeme(std::vector<Regex> contents);
    ExprId any_value();
    ExprId fail(std::string message);

    const Json& root_;
    const JsonSchemaOptions& options_;
    std::chrono::steady_clock::time_point deadline_;
    GrammarIr ir_;
    Regex ws_;
    std::map<std::string, int32_t> ref_rules_;  // target JSON pointer -> rule
    int32_t any_rule_ = -1;
    Status error_;
};

}  // namespace hichat::grammar
