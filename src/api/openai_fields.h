// What HiChat does with every field of the OpenAI request schemas: the chat completions and legacy
// completions bodies, a chat message, stream_options; the Responses body, its text object, input items and
// their content parts; the Conversations body. Each field named by the schema is one of
//   implemented  parsed by parse_generation_request (with the vLLM extensions HiChat implements:
//                top_k, min_p, repetition_penalty, ignore_eos, priority);
//   no-op        accepted (type-checked) and without effect, because it asks for nothing that would make
//                HiChat's answer differ: `user`, `metadata`, `safety_identifier`, `prompt_cache_key`,
//                `parallel_tool_calls` (tools are never used);
//   refused      a 400 naming it (code "unsupported_field"), unless its value asks for nothing: null, or
//                the one "off" value listed in the rule (`logprobs: false`, `tools: []`, `echo: false`,
//                `response_format: {"type": "text"}`, ...), which is accepted because it describes exactly
//                what HiChat does. `best_of` other than 1 is refused the same way.
// A key that no rule names is outside the schema: it is ignored, and parse_generation_request names
// all such keys of a request in one log line (as vLLM does).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"

namespace hichat::api {

enum class FieldUse { kImplemented, kNoOp, kRefused };

struct FieldRule {
    std::string_view name;
    FieldUse use;
    // kNoOp: whether the value has the right type; kRefused: whether it asks for nothing (accepted);
    // kImplemented: unused (the parser checks it). Null values are always accepted.
    bool (*accepts)(const nlohmann::json& value) = nullptr;
    std::string_view accepted;  // kNoOp: the type in words; kRefused: the accepted value, "" if none
};

enum class FieldScope {
    kChat, kCompletions, kMessage, kStreamOptions,
    kResponses,         // POST /v1/responses
    kResponseText,      // its "text" object
    kInputItem,         // one item of "input" (or of a conversation's items)
    kInputContentPart,  // one content part of an input item
    kConversation,      // POST /v1/conversations (and its update)
};

std::span<const FieldRule> field_rules(FieldScope scope);

// Checks every key of `object` against the rules of `scope`. `path` prefixes the params in errors and
// in `ignored` ("messages[2]" -> "messages[2].name"; "" for the body). Keys no rule names are appended
// to `ignored`. Returns the error of the first key that is refused or of the wrong type.
std::optional<ApiError> check_fields(FieldScope scope, const nlohmann::json& object, const std::string& path,
                                     std::vector<std::string>& ignored);

// The 400 for a field HiChat does not implement: code "unsupported_field", the message says so and
// names `accepted` when some value is accepted.
ApiError unsupported_field(const std::string& param, std::string_view accepted);

}  // namespace hichat::api
