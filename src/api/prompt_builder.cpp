#include "api/prompt_builder.h"

#include "api/openai_fields.h"

namespace hichat::api {
namespace {

std::string_view trimmed(std::string_view s) {
    const char* ws = " \t\n\r";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

void append(std::vector<int32_t>& ids, const std::vector<int32_t>& more) { ids.insert(ids.end(), more.begin(), more.end()); }

}  // namespace

PromptBuilder::PromptBuilder(const tokenizer::Tokenizer& tokenizer, const tokenizer::ChatTemplate* chat_template,
                             std::string bos_token, std::string eos_token, ToolFormat tool_format)
    : tokenizer_(tokenizer),
      chat_template_(chat_template),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      tool_format_(tool_format) {}

Result<std::string> PromptBuilder::render_chat(const std::vector<tokenizer::ChatMessage>& messages) const {
    return render_chat(messages, /*add_generation_prompt=*/true);
}

Result<std::string> PromptBuilder::render_chat(const std::vector<tokenizer::ChatMessage>& messages,
                                               bool add_generation_prompt, const nlohmann::ordered_json& tools) const {
    if (chat_template_ == nullptr) return invalid_argument("the model has no chat_template; use /v1/completions");
    tokenizer::ChatTemplateInputs in;
    in.messages = messages;
    in.add_generation_prompt = add_generation_prompt;
    in.bos_token = bos_token_;
    in.eos_token = eos_token_;
    if (!tools.is_null()) in.extra_vars = {{"tools", tools}};
    return chat_template_->render(in);
}

std::optional<ApiError> PromptBuilder::build(const GenerationRequest& request, std::vector<int32_t>& ids) const {
    ids.clear();
    if (request.endpoint == Endpoint::kCompletions) {
        if (!request.prompt_ids.empty()) {
            for (int32_t id : request.prompt_ids) {
                if (id >= tokenizer_.vocab_size()) {
                    return bad_field("prompt", "prompt token id " + std::to_string(id) + " is outside the vocabulary");
                }
            }
            ids = request.prompt_ids;
        } else {
            ids = tokenizer_.encode(request.prompt, /*add_special_tokens=*/true, /*parse_special=*/true);
        }
        if (ids.empty()) return bad_field("prompt", "prompt is empty");
        return std::nullopt;
    }
    if (request.tools.active() && tool_format_ == ToolFormat::kNone) {
        ApiError e = unsupported_field("tools", "");
        e.message = "tools are not supported with this model: its chat template has no tool-call format HiChat "
                    "knows (Hermes/Qwen <tool_call>, Llama-3 JSON, Mistral [TOOL_CALLS])";
        return e;
    }
    // The template sees the tools unless tool_choice is "none" (then the model is not told of them).
    auto rendered = render_chat(request.messages, /*add_generation_prompt=*/true,
                                request.tools.active() ? request.tools.tools : nlohmann::ordered_json(nullptr));
    if (!rendered.ok()) return bad_field("messages", rendered.status().message());
    ids = encode_rendered(*rendered, request.messages);
    if (ids.empty()) return bad_field("messages", "the rendered prompt is empty");
    return std::nullopt;
}

std::vector<int32_t> PromptBuilder::encode_rendered(const std::string& rendered,
                                                    const std::vector<tokenizer::ChatMessage>& messages) const {
    // Most prompts hold no special-token strings in user text: encode in one piece, exactly as
    // transformers' apply_chat_template does. Otherwise split around the contents (boundaries may
    // then tokenize slightly differently, which is the price of not obeying injected tokens).
    bool injected = false;
    for (const auto& m : messages) {
        for (int32_t id : tokenizer_.encode(m.content, false, true)) injected |= tokenizer_.is_special(id);
    }
    if (!injected) return tokenizer_.encode(rendered, false, true);
    std::vector<int32_t> ids;
    size_t cursor = 0;
    for (const auto& m : messages) {
        std::string_view content = m.content;
        size_t at = content.empty() ? std::string::npos : rendered.find(content, cursor);
        if (at == std::string::npos && !trimmed(content).empty()) {
            content = trimmed(content);
            at = rendered.find(content, cursor);
        }
        if (at == std::string::npos) continue;  // the template transformed it; encoded with the rest
        // Template text (with its special tokens) before the content, then the content as plain text.
        append(ids, tokenizer_.encode(std::string_view(rendered).substr(cursor, at - cursor), false, true));
        append(ids, tokenizer_.encode(content, false, false));
        cursor = at + content.size();
    }
    append(ids, tokenizer_.encode(std::string_view(rendered).substr(cursor), false, true));
    return ids;
}

}  // namespace hichat::api
