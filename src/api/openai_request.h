// The OpenAI request schema -> a validated GenerationRequest. Pure: no engine, no HTTP; every error is
// an ApiError naming the field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "api/constrained_decoding.h"
#include "api/tool_calls.h"
#include "sampling/sampling_params.h"
#include "tokenizer/template/chat_template.h"

namespace hichat::api {

enum class Endpoint { kChatCompletions, kCompletions };

struct GenerationRequest {
    Endpoint endpoint = Endpoint::kChatCompletions;
    std::string model;                                // empty: not given
    std::vector<tokenizer::ChatMessage> messages;     // chat: control characters stripped
    std::string prompt;                               // completions (text prompt)
    std::vector<int32_t> prompt_ids;                  // completions given token ids instead
    sampling::SamplingParams sampling;                // logit_bias ids checked against the vocabulary later
    int n = 1;                                        // choices: the engine runs n children (seeds seed + i)
    std::optional<int> max_tokens;                    // unset: as many as the context allows; 0 only with echo
    bool echo = false;                                // completions: the prompt (and its logprobs) first
    std::string max_tokens_field = "max_tokens";      // the name the client gave it (for errors)
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;                       // stream_options.include_usage
    bool ignore_eos = false;                          // vLLM extension, for benchmarks
    std::string user;
    int priority = 0;
    // Chat logprobs: true with top_logprobs k (0-20); completions logprobs: k (0-5). -1: not asked.
    int num_logprobs = -1;
    // Chat response_format json_object / json_schema, or the `grammar` extension (GBNF); unset: free text.
    std::optional<GrammarSpec> grammar;
    // Chat tools, tool_choice and parallel_tool_calls; the tools' parameters compile later.
    ToolRequest tools;
    std::vector<std::string> ignored_fields;          // keys outside the OpenAI schema, as params ("messages[0].x")
};

// `n` at most: each choice is one engine sequence.
inline constexpr int kMaxChoices = 16;
// `tools` entries at most (OpenAI's limit).
inline constexpr int kMaxTools = 128;
// OpenAI's limit on logit_bias entries.
inline constexpr int kMaxLogitBiasEntries = 300;
// logit_bias values lie in [-kMaxLogitBias, kMaxLogitBias].
inline constexpr double kMaxLogitBias = 100.0;

// Bodies nesting arrays and objects deeper than this are refused before they are parsed. A chat body
// needs 5 levels (body, messages, message, content, part).
inline constexpr int kMaxJsonDepth = 64;

// Parses and validates a request body. `body` may contain invalid UTF-8 (reported by field). Every field
// of the OpenAI schema is implemented, accepted as a no-op or refused by name (openai_fields.h); keys
// outside the schema are listed in `out.ignored_fields` and named in one warning log line.
std::optional<ApiError> parse_generation_request(Endpoint endpoint, std::string body, GenerationRequest& out);

// The first steps of every body parser: the nesting pre-scan, invalid UTF-8 named by field, JSON
// syntax, an object at the top. `out` is a nlohmann::json.
std::optional<ApiError> parse_json_object(std::string body, nlohmann::json& out);

}  // namespace hichat::api
