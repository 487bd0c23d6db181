// TurnPrompt: the token ids of one Responses turn that continues earlier turns. When the earlier turn's
// exact ids are known (same model, same instructions), the prompt is those ids + the tokens of only the
// new suffix (end of the assistant turn, the new messages, the generation prompt), so the engine's
// prefix cache sees the same prefix it computed before. The suffix is the difference between the chat
// template's render of history + new (with generation prompt) and of the history alone; a template
// that rewrites history (its history render is not a prefix) falls back to tokenizing the full render.
// Pure (PromptBuilder is immutable); any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/prompt_builder.h"
#include "tokenizer/template/chat_template.h"

namespace hichat::api {

struct TurnHistory {
    std::vector<tokenizer::ChatMessage> messages;   // earlier turns, oldest first, instructions excluded
    std::optional<std::vector<int32_t>> token_ids;  // prompt + output ids of the turn that ended `messages`
    std::optional<std::string> instructions;        // that turn's instructions
    std::string model_fingerprint;                  // the model and tokenizer `token_ids` belong to
};

struct TurnInput {
    std::optional<std::string> instructions;        // this turn's (never carried over)
    std::vector<tokenizer::ChatMessage> messages;   // this turn's new messages
    std::string model_fingerprint;
    int max_context_tokens = 0;
    std::optional<int> max_output_tokens;
    bool truncation_auto = false;                   // drop the oldest turns instead of a 400
    std::string input_param = "input";              // the field errors name
};

struct TurnPrompt {
    std::vector<int32_t> ids;                       // [num_prompt_tokens]
    std::vector<tokenizer::ChatMessage> messages;   // history kept + new, instructions excluded
    int num_tokens_reused = 0;                      // leading ids taken from the stored turn (0: full render)
    int num_messages_dropped = 0;                   // by truncation "auto"
};

// Errors: the template failed (400 on `input_param`), the prompt does not fit the context with
// truncation disabled (400 on `input_param`), nothing fits even after dropping every earlier turn.
std::optional<ApiError> build_turn_prompt(const PromptBuilder& prompts, const TurnHistory& history,
                                          const TurnInput& input, TurnPrompt& out);

// The reused-prefix path alone: nullopt when it does not apply (fingerprint or instructions differ,
// no ids, the history does not end with an assistant message, or the template rewrites history).
std::optional<std::vector<int32_t>> continue_token_ids(const PromptBuilder& prompts, const TurnHistory& history,
                                                       const TurnInput& input);

}  // namespace hichat::api
