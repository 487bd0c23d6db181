#include "grammar/grammar.h"

#include <nlohmann/json.hpp>

#include "grammar/char_regex.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_compiler.h"

namespace hichat::grammar {
namespace {

Status too_large(const char* what, size_t size, size_t limit) {
    return invalid_argument(std::string(what) + " is " + std::to_string(size) + " bytes, over the limit of " +
                            std::to_string(limit));
}

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> compile_json_schema(std::string_view schema_json,
                                                                   const JsonSchemaOptions& options) {
    if (schema_json.size() > options.limits.max_source_bytes) {
        return too_large("JSON schema", schema_json.size(), options.limits.max_source_bytes);
    }
    nlohmann::ordered_json schema;
    try {
        schema = nlohmann::ordered_json::parse(schema_json);
    } catch (const std::exception& e) {
        return invalid_argument(std::string("JSON schema is not valid JSON: ") + e.what());
    }
    return compile_json_schema_value(schema, options);
}

Result<std::shared_ptr<const CompiledGrammar>> compile_json_schema_value(const nlohmann::ordered_json& schema,
                                                                   const JsonSchemaOptions& options) {
    const auto deadline = options.limits.deadline_from_now();
    const size_t size = schema.dump().size();
    if (size > options.limits.max_source_bytes) return too_large("JSON schema", size, options.limits.max_source_bytes);
    auto ir = JsonSchemaCompiler(schema, options, deadline).run();
    if (!ir.ok()) return ir.status();
    return CompiledGrammar::from_ir(ir.value(), options.limits, deadline);
}

Result<std::shared_ptr<const CompiledGrammar>> compile_json_object(const JsonSchemaOptions& options) {
    return compile_json_schema_value(nlohmann::ordered_json{{"type", "object"}}, options);
}

Result<std::shared_ptr<const CompiledGrammar>> compile_regex(std::string_view pattern, const CompileLimits& limits) {
    if (pattern.size() > limits.max_source_bytes) return too_large("regex", pattern.size(), limits.max_source_bytes);
    const auto deadline = limits.deadline_from_now();
    auto re = parse_regex(pattern, false, limits.max_repeat);
    if (!re.ok()) return re.status();
    GrammarIr ir;
    const int32_t root = ir.new_rule("root");
    ir.define(root, ir.lexeme(to_utf8_regex(re.value())));
    ir.set_root(root);
    return CompiledGrammar::from_ir(ir, limits, deadline);
}

Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view grammar, const CompileLimits& limits) {
    if (grammar.size() > limits.max_source_bytes) return too_large("grammar", grammar.size(), limits.max_source_bytes);
    const auto deadline = limits.deadline_from_now();
    auto ir = parse_gbnf(grammar, limits);
    if (!ir.ok()) return ir.status();
    return CompiledGrammar::from_ir(ir.value(), limits, deadline);
}

}  // namespace hichat::grammar
