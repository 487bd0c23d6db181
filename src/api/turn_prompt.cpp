#include "api/turn_prompt.h"

#include <algorithm>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace hichat::api {
namespace {

using tokenizer::ChatMessage;

std::vector<ChatMessage> with_instructions(const std::optional<std::string>& instructions,
                                           const std::vector<ChatMessage>& a, const std::vector<ChatMessage>& b = {}) {
    std::vector<ChatMessage> all;
    all.reserve(a.size() + b.size() + 1);
    if (instructions) all.push_back({"system", *instructions});
    all.insert(all.end(), a.begin(), a.end());
    all.insert(all.end(), b.begin(), b.end());
    return all;
}

spdlog::logger& logger() {
    static const auto log = std::make_shared<spdlog::logger>("responses", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    return *log;
}

// The output room a prompt must leave: max_output_tokens when given; else at least one token, and
// under truncation "auto" a quarter of the context (at least 1), so that dropping turns leaves a
// reply room to be written in rather than one token.
size_t output_room(const TurnInput& input) {
    if (input.max_output_tokens) return static_cast<size_t>(*input.max_output_tokens);
    if (!input.truncation_auto) return 1;
    return static_cast<size_t>(std::max(1, input.max_context_tokens / 4));
}

// Whether `n` prompt tokens leave room for the output.
bool fits(size_t n, const TurnInput& input) {
    return n + output_room(input) <= static_cast<size_t>(input.max_context_tokens);
}

// Drops the oldest message, then any messages up to the next user message (a whole turn).
void drop_oldest_turn(std::vector<ChatMessage>& history, int& dropped) {
    size_t n = 1;
    while (n < history.size() && history[n].role != "user") ++n;
    history.erase(history.begin(), history.begin() + static_cast<std::ptrdiff_t>(n));
    dropped += static_cast<int>(n);
}

std::optional<ApiError> full_render(const PromptBuilder& prompts, const std::vector<ChatMessage>& history,
                                    const TurnInput& input, std::vector<int32_t>& ids) {
    const std::vector<ChatMessage> all = with_instructions(input.instructions, history, input.messages);
    auto rendered = prompts.render_chat(all, /*add_generation_prompt=*/true);
    if (!rendered.ok()) return bad_field(input.input_param, rendered.status().message());
    ids = prompts.encode_rendered(*rendered, all);
    if (ids.empty()) return bad_field(input.input_param, "the rendered prompt is empty");
    return std::nullopt;
}

ApiError too_long(const TurnInput& input, size_t num_tokens) {
    return bad_field(input.input_param,
                     "the conversation is " + std::to_string(num_tokens) + " tokens and the output needs " +
                         std::to_string(output_room(input)) + " more; this model's context is " +
                         std::to_string(input.max_context_tokens) +
                         " tokens (truncation \"auto\" drops the oldest turns instead)");
}

}  // namespace

std::optional<std::vector<int32_t>> continue_token_ids(const PromptBuilder& prompts, const TurnHistory& history,
                                                       const TurnInput& input) {
    if (!history.token_ids || history.model_fingerprint != input.model_fingerprint ||
        history.instructions != input.instructions || history.messages.empty() ||
        history.messages.back().role != "assistant" || history.messages.back().content.empty()) {
        return std::nullopt;
    }
    auto before = prompts.render_chat(with_instructions(input.instructions, history.messages), false);
    const std::vector<ChatMessage> all = with_instructions(input.instructions, history.messages, input.messages);
    auto after = prompts.render_chat(all, true);
    if (!before.ok() || !after.ok()) return std::nullopt;
    // The stored output ends where the assistant's text ends; the end-of-turn marker is part of the suffix.
    const std::string& reply = history.messages.back().content;
    const size_t reply_at = before->rfind(reply);
    if (reply_at == std::string::npos || !after->starts_with(*before)) {
        logger().debug("responses: the chat template rewrites the history; tokenizing the whole conversation");
        return std::nullopt;
    }
    const std::string suffix = after->substr(reply_at + reply.size());
    std::vector<int32_t> ids = *history.token_ids;
    const std::vector<int32_t> tail = prompts.encode_rendered(suffix, input.messages);
    ids.insert(ids.end(), tail.begin(), tail.end());
    return ids;
}

std::optional<ApiError> build_turn_prompt(const PromptBuilder& prompts, const TurnHistory& history,
                                          const TurnInput& input, TurnPrompt& out) {
    out = TurnPrompt{};
    if (auto ids = continue_token_ids(prompts, history, input)) {
        out.ids = std::move(*ids);
        out.num_tokens_reused = static_cast<int>(history.token_ids->size());
    } else if (auto e = full_render(prompts, history.messages, input, out.ids)) {
        return e;
    }
    std::vector<ChatMessage> kept = history.messages;
    if (!fits(out.ids.size(), input)) {
        if (!input.truncation_auto) return too_long(input, out.ids.size());
        out.num_tokens_reused = 0;
        while (!fits(out.ids.size(), input)) {
            if (kept.empty()) return too_long(input, out.ids.size());
            drop_oldest_turn(kept, out.num_messages_dropped);
            if (auto e = full_render(prompts, kept, input, out.ids)) return e;
        }
    }
    out.messages = std::move(kept);
    out.messages.insert(out.messages.end(), input.messages.begin(), input.messages.end());
    return std::nullopt;
}

}  // namespace hichat::api
