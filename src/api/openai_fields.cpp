#include "api/openai_fields.h"

#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>

namespace hichat::api {
namespace {

using Json = nlohmann::json;
using enum FieldUse;

// Value predicates. A refused field with `never` has no value that asks for nothing.
bool never(const Json&) { return false; }
bool is_false(const Json& v) { return v.is_boolean() && !v.get<bool>(); }
bool is_zero(const Json& v) { return v.is_number_integer() && v.get<int64_t>() == 0; }
bool is_one(const Json& v) { return v.is_number_integer() && v.get<int64_t>() == 1; }
bool is_empty_array(const Json& v) { return v.is_array() && v.empty(); }
bool is_empty_object(const Json& v) { return v.is_object() && v.empty(); }
bool is_empty_string(const Json& v) { return v.is_string() && v.get<std::string>().empty(); }
bool is_string(const Json& v) { return v.is_string(); }
bool is_object(const Json& v) { return v.is_object(); }
bool is_boolean(const Json& v) { return v.is_boolean(); }
bool is_none_or_auto(const Json& v) { return v == "none" || v == "auto"; }  // with no tools: no tool calls
bool is_default_tier(const Json& v) { return v == "auto" || v == "default"; }  // HiChat has one tier
bool is_text_only(const Json& v) { return v == Json::array({"text"}); }
bool is_text_format(const Json& v) {  // {"type": "text"}; value() would throw on a non-string type
    return v.is_object() && v.size() == 1 && v.begin().key() == "type" && *v.begin() == "text";
}

// The fields both request bodies share (OpenAI's schema as of 2025, plus HiChat's vLLM extensions).
constexpr std::array kSharedRules = std::to_array<FieldRule>({
    {"model", kImplemented},
    {"frequency_penalty", kImplemented},
    {"presence_penalty", kImplemented},
    {"max_tokens", kImplemented},
    {"max_completion_tokens", kImplemented},  // on completions too
    {"n", kImplemented},                      // 1 to kMaxChoices
    {"seed", kImplemented},
    {"stop", kImplemented},
    {"stream", kImplemented},
    {"stream_options", kImplemented},
    {"temperature", kImplemented},
    {"top_p", kImplemented},
    {"top_k", kImplemented},
    {"min_p", kImplemented},
    {"repetition_penalty", kImplemented},
    {"ignore_eos", kImplemented},
    {"priority", kImplemented},
    {"grammar", kImplemented},  // GBNF, as llama.cpp
    {"user", kNoOp, is_string, "a string"},
    {"logit_bias", kImplemented},
});

// The chat completions request body: the shared fields and these.
constexpr std::array kChatOnlyRules = std::to_array<FieldRule>({
    {"messages", kImplemented},
    {"safety_identifier", kNoOp, is_string, "a string"},
    {"prompt_cache_key", kNoOp, is_string, "a string"},
    {"metadata", kNoOp, is_object, "an object"},
    {"parallel_tool_calls", kImplemented},
    {"audio", kRefused, never, ""},
    {"function_call", kRefused, is_none_or_auto, "\"none\" or \"auto\""},
    {"functions", kRefused, is_empty_array, "[]"},
    {"logprobs", kImplemented},
    {"top_logprobs", kImplemented},
    {"modalities", kRefused, is_text_only, "[\"text\"]"},
    {"prediction", kRefused, never, ""},
    {"reasoning_effort", kRefused, never, ""},
    {"response_format", kImplemented},
    {"service_tier", kRefused, is_default_tier, "\"auto\" or \"default\""},
    {"store", kRefused, is_false, "false"},
    {"tool_choice", kImplemented},
    {"tools", kImplemented},
    {"verbosity", kRefused, never, ""},
    {"web_search_options", kRefused, never, ""},
});

// The legacy completions request body: the shared fields and these.
constexpr std::array kCompletionOnlyRules = std::to_array<FieldRule>({
    {"prompt", kImplemented},
    {"best_of", kRefused, is_one, "1"},
    {"echo", kImplemented},
    {"logprobs", kImplemented},  // an integer: even 0 asks for the sampled token's logprob
    {"response_format", kImplemented},  // vLLM's extension: as on chat
    {"suffix", kRefused, is_empty_string, "\"\""},
});

template <size_t N, size_t M>
constexpr std::array<FieldRule, N + M> join(const std::array<FieldRule, N>& a, const std::array<FieldRule, M>& b) {
    std::array<FieldRule, N + M> out{};
    std::copy(a.begin(), a.end(), out.begin());
    std::copy(b.begin(), b.end(), out.begin() + N);
    return out;
}

constexpr auto kChatRules = join(kSharedRules, kChatOnlyRules);
constexpr auto kCompletionRules = join(kSharedRules, kCompletionOnlyRules);

// One chat message (every role's fields).
constexpr FieldRule kMessageRules[] = {
    {"role", kImplemented},
    {"content", kImplemented},
    {"name", kRefused, is_empty_string, "\"\""},
    {"tool_calls", kImplemented},    // assistant messages
    {"tool_call_id", kImplemented},  // tool messages
    {"function_call", kRefused, never, ""},
    {"refusal", kRefused, never, ""},
    {"audio", kRefused, never, ""},
};

constexpr FieldRule kStreamOptionRules[] = {
    {"include_usage", kImplemented},
    {"include_obfuscation", kRefused, is_false, "false"},
};

// The Responses API body (OpenAI's schema as of 2025). Tools, reasoning and `include`
// are refused by name until the issues that implement them land.
constexpr FieldRule kResponsesRules[] = {
    {"model", kImplemented},
    {"input", kImplemented},
    {"instructions", kImplemented},
    {"store", kImplemented},
    {"previous_response_id", kImplemented},
    {"conversation", kImplemented},
    {"max_output_tokens", kImplemented},
    {"temperature", kImplemented},
    {"top_p", kImplemented},
    {"stream", kImplemented},
    {"truncation", kImplemented},
    {"metadata", kImplemented},
    {"text", kImplemented},
    {"background", kImplemented},  // with store (not false) and without stream
    {"user", kNoOp, is_string, "a string"},
    {"safety_identifier", kNoOp, is_string, "a string"},
    {"prompt_cache_key", kNoOp, is_string, "a string"},
    {"prompt_cache_retention", kNoOp, is_string, "a string"},
    {"parallel_tool_calls", kNoOp, is_boolean, "a boolean"},
    {"stream_options", kRefused, is_empty_object, "{}"},
    {"tools", kRefused, is_empty_array, "[]"},
    {"tool_choice", kRefused, is_none_or_auto, "\"none\" or \"auto\""},
    {"max_tool_calls", kRefused, never, ""},
    {"reasoning", kRefused, never, ""},
    {"include", kRefused, is_empty_array, "[]"},
    {"top_logprobs", kRefused, is_zero, "0"},
    {"prompt", kRefused, never, ""},
    {"service_tier", kRefused, is_default_tier, "\"auto\" or \"default\""},
};

constexpr FieldRule kResponseTextRules[] = {
    {"format", kImplemented},  // {"type": "text"} only: the parser refuses others as unsupported
    {"verbosity", kRefused, [](const Json& v) { return v == "medium"; }, "\"medium\""},
};

// A message item of `input`; other item types (function calls, reasoning, references) are refused by
// the parser naming `input[i].type`.
constexpr FieldRule kInputItemRules[] = {
    {"type", kImplemented},
    {"role", kImplemented},
    {"content", kImplemented},
    {"id", kNoOp, is_string, "a string"},
    {"status", kNoOp, is_string, "a string"},
};

constexpr FieldRule kInputContentPartRules[] = {
    {"type", kImplemented},
    {"text", kImplemented},
    {"annotations", kRefused, is_empty_array, "[]"},
    {"logprobs", kRefused, is_empty_array, "[]"},
};

constexpr FieldRule kConversationRules[] = {
    {"metadata", kImplemented},
    {"items", kImplemented},
};

const FieldRule* find_rule(std::span<const FieldRule> rules, std::string_view name) {
    auto it = std::find_if(rules.begin(), rules.end(), [&](const FieldRule& r) { return r.name == name; });
    return it == rules.end() ? nullptr : &*it;
}

}  // namespace

std::span<const FieldRule> field_rules(FieldScope scope) {
    switch (scope) {
        case FieldScope::kChat: return kChatRules;
        case FieldScope::kCompletions: return kCompletionRules;
        case FieldScope::kMessage: return kMessageRules;
        case FieldScope::kStreamOptions: return kStreamOptionRules;
        case FieldScope::kResponses: return kResponsesRules;
        case FieldScope::kResponseText: return kResponseTextRules;
        case FieldScope::kInputItem: return kInputItemRules;
        case FieldScope::kInputContentPart: return kInputContentPartRules;
        case FieldScope::kConversation: return kConversationRules;
    }
    return {};
}

ApiError unsupported_field(const std::string& param, std::string_view accepted) {
    std::string message = param + " is not supported by HiChat yet";
    if (!accepted.empty()) message += "; the only value accepted is " + std::string(accepted) + " (or null)";
    return {.http_status = 400, .message = std::move(message), .param = param, .code = "unsupported_field"};
}

std::optional<ApiError> check_fields(FieldScope scope, const Json& object, const std::string& path,
                                     std::vector<std::string>& ignored) {
    const std::span<const FieldRule> rules = field_rules(scope);
    for (auto it = object.begin(); it != object.end(); ++it) {
        const std::string param = path.empty() ? it.key() : path + "." + it.key();
        const FieldRule* rule = find_rule(rules, it.key());
        if (rule == nullptr) {
            ignored.push_back(param);
            continue;
        }
        if (rule->use == kImplemented || it->is_null() || rule->accepts(*it)) continue;
        if (rule->use == kNoOp) return bad_field(param, param + " must be " + std::string(rule->accepted));
        return unsupported_field(param, rule->accepted);
    }
    return std::nullopt;
}

}  // namespace hichat::api
