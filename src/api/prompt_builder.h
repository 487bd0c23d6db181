// PromptBuilder: OpenAI messages or prompt -> token ids. Chat messages go through the model's chat
// template; text that came from a message's content is tokenized with special-token strings as plain
// text, so a user cannot inject control tokens. Immutable; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/tool_calls.h"
#include "tokenizer/template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace hichat::api {

class PromptBuilder {
public:
    // `chat_template` may be null (chat requests then get a 400 explaining the model has none).
    PromptBuilder(const tokenizer::Tokenizer& tokenizer, const tokenizer::ChatTemplate* chat_template,
                  std::string bos_token, std::string eos_token, ToolFormat tool_format = ToolFormat::kNone);

    // Fills `ids`; errors name the field (template failures are reported on "messages").
    std::optional<ApiError> build(const GenerationRequest& request, std::vector<int32_t>& ids) const;

    // The rendered chat prompt text (for tests and logs).
    Result<std::string> render_chat(const std::vector<tokenizer::ChatMessage>& messages) const;
    // The same with or without the generation prompt (a history that ends with an assistant turn), and
    // with the request's `tools` (an array; null: none) for the template.
    Result<std::string> render_chat(const std::vector<tokenizer::ChatMessage>& messages, bool add_generation_prompt,
                                    const nlohmann::ordered_json& tools = nullptr) const;

    // Encodes `rendered`, taking each message content's span (found in order) as plain text.
    std::vector<int32_t> encode_rendered(const std::string& rendered,
                                         const std::vector<tokenizer::ChatMessage>& messages) const;

    const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
    // The tool-call format of the model's chat template (kNone: the model cannot take tools).
    ToolFormat tool_format() const { return tool_format_; }

private:

    const tokenizer::Tokenizer& tokenizer_;
    const tokenizer::ChatTemplate* chat_template_;
    std::string bos_token_, eos_token_;
    ToolFormat tool_format_;
};

}  // namespace hichat::api
