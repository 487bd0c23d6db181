// OpenAI response bodies and SSE chunks for chat and text completions. Pure; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/openai_request.h"
#include "api/tool_calls.h"

namespace hichat::api {

struct ResponseIds {
    std::string id;       // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;  // unix seconds
    std::string model;
    Endpoint endpoint = Endpoint::kChatCompletions;
};

struct Usage {
    int prompt_tokens = 0;
    int completion_tokens = 0;
    int cached_tokens = 0;  // prompt tokens served from the prefix cache (prompt_tokens_details)
};

// One choice of a non-streamed response; choices[i] has index i.
struct ChoiceOutput {
    std::string text;
    std::string finish_reason;
    std::optional<nlohmann::ordered_json> logprobs;  // a LogprobsJson object, when the request asked
    std::vector<ToolCall> tool_calls;                // chat: message.tool_calls (content null when text is empty)
};

// Whole non-streamed response: every choice, then the usage (prompt tokens once, completion tokens
// summed over the choices).
std::string completion_body(const ResponseIds& ids, std::span<const ChoiceOutput> choices, const Usage& usage);
std::string completion_body(const ResponseIds& ids, const std::string& text, const std::string& finish_reason,
                            const Usage& usage);  // one choice
// "data: {...}\n\n" carrying a text delta of choice 0 (chat: the first one also carries role "assistant").
std::string delta_chunk(const ResponseIds& ids, const std::string& text, bool first);

// The parts of one choice's delta chunks that do not change from token to token, built once per
// choice: delta_chunk() then costs one allocation per token (the streaming hot path).
struct DeltaChunkFormat {
    std::string first_head;  // "data: {...,"choices":[{"index":i,..." up to the text, first chunk
    std::string head;        // the same for the later chunks
    std::string tail;        // after the quoted text, through "\n\n"
};
DeltaChunkFormat delta_chunk_format(const ResponseIds& ids, int index = 0);
// The one function that formats a streamed choice's content chunk (one choice per chunk).
std::string delta_chunk(const DeltaChunkFormat& format, std::string_view text, bool first);
// A delta chunk of choice `index` whose choice carries `logprobs` (a LogprobsJson object): built whole,
// for the requests that asked for logprobs.
std::string delta_chunk_with_logprobs(const ResponseIds& ids, int index, std::string_view text, bool first,
                                      const nlohmann::ordered_json& logprobs);
// OpenAI's tool-call deltas of choice `index`: a call's start (its index, id, type and name, empty
// arguments; `first`: the choice's first chunk, with the role), then pieces of its arguments.
std::string tool_call_start_chunk(const ResponseIds& ids, int index, int call_index, const std::string& id,
                                  const std::string& name, bool first);
std::string tool_call_arguments_chunk(const ResponseIds& ids, int index, int call_index, std::string_view arguments);
// The last content chunk of choice `index`: empty delta, finish_reason set.
std::string finish_chunk(const ResponseIds& ids, const std::string& finish_reason, int index = 0);
// The usage chunk of stream_options.include_usage (empty choices).
std::string usage_chunk(const ResponseIds& ids, const Usage& usage);
inline constexpr const char* kDoneChunk = "data: [DONE]\n\n";
// An error inside an already started stream: "data: {"error": {...}}\n\n" (then kDoneChunk).
std::string error_chunk(const ApiError& error);

}  // namespace hichat::api
