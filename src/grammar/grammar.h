// The grammar library's entry points: compile a JSON Schema, a regex or a GBNF grammar into an
// immutable CompiledGrammar, then drive a GrammarMatcher (grammar_matcher.h) per sequence with a
// TokenizerInfo (tokenizer_info.h) per model. Compilation may run on any thread; errors are
// kInvalidArgument Statuses whose message names the keyword or position (docs/grammar.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "grammar/compiled_grammar.h"

namespace hichat::grammar {

// JSON values framed by literal text, as tool calls are: `begin`, then between min_values and max_values
// values (-1: no limit) separated by `separator`, then `end`.
struct JsonFrame {
    std::string begin, separator, end;
    int min_values = 1, max_values = 1;
};

struct JsonSchemaOptions {
    std::optional<JsonFrame> frame;             // unset: exactly one value, nothing around it
    int max_whitespace = 0;                     // 0: compact JSON; N: up to N of ' ', \n, \r, \t before each token
    bool strict_additional_properties = false;  // an absent additionalProperties counts as false
    // Integers may also be written with a zero fraction ("1.0"), which JSON Schema counts as integers.
    // Off when generating (a model would write 20.0 for 20); on to validate instances as written.
    bool integers_with_zero_fraction = false;
    CompileLimits limits;
};

// schema_json: the schema's text; object properties keep their order from the text.
Result<std::shared_ptr<const CompiledGrammar>> compile_json_schema(std::string_view schema_json,
                                                                   const JsonSchemaOptions& options = {});
Result<std::shared_ptr<const CompiledGrammar>> compile_json_schema_value(const nlohmann::ordered_json& schema,
                                                                   const JsonSchemaOptions& options = {});
// response_format json_object: any JSON object ({"type":"object"}).
Result<std::shared_ptr<const CompiledGrammar>> compile_json_object(const JsonSchemaOptions& options = {});
// The whole output matches the regex (ECMAScript subset; ^ and $ at the edges are no-ops).
Result<std::shared_ptr<const CompiledGrammar>> compile_regex(std::string_view pattern, const CompileLimits& limits = {});
// A GBNF grammar (llama.cpp syntax) starting at rule `root`.
Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view grammar, const CompileLimits& limits = {});

}  // namespace hichat::grammar
