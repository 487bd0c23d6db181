// LogprobsJson: the OpenAI `logprobs` objects of generated tokens, from the engine's TokenLogprobs and
// the tokenizer's raw token bytes. Chat: {"content": [{token, logprob, bytes, top_logprobs: [{token,
// logprob, bytes}]}], "refusal": null}. Completions (legacy): {tokens, token_logprobs, top_logprobs:
// [{token: logprob}], text_offset}, with the sampled token added to its top map when it is not among
// the k asked for (so up to k + 1 entries, as OpenAI). `token` is the token's bytes as text (invalid
// UTF-8, such as half a character of a byte-level token, replaced by U+FFFD); `bytes` are the raw
// bytes; -inf is written as -9999.0 (OpenAI's and vLLM's stand-in). text_offset counts code points of
// the token texts from the start of the choice's text. Any thread; the tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace hichat::api {

class LogprobsJson {
public:
    LogprobsJson(const tokenizer::Tokenizer& tokenizer, int num_top) : tokenizer_(tokenizer), num_top_(num_top) {}

    // Chat: appends one entry per token to `content` (a JSON array).
    void append_chat(std::span<const int32_t> ids, std::span<const sampling::TokenLogprobs> logprobs,
                     nlohmann::ordered_json& content) const;
    // Completions: appends to the four arrays of `out` ({"tokens": [], ...}); `text_offset` is where the
    // next token starts and moves past the tokens appended.
    void append_completion(std::span<const int32_t> ids, std::span<const sampling::TokenLogprobs> logprobs,
                           int64_t& text_offset, nlohmann::ordered_json& out) const;
    // Completions with echo: the prompt's tokens first, the first with null logprobs (nothing precedes
    // it), the others from prompt_logprobs ([ids.size() - 1], engine::TokenEvent::prompt_logprobs),
    // their offsets from 0; `text_offset` is then where the echoed prompt text ends (the completion's
    // tokens count from there).
    void append_completion_prompt(std::span<const int32_t> ids, std::span<const sampling::TokenLogprobs> prompt_logprobs,
                                  const std::string& prompt_text, int64_t& text_offset,
                                  nlohmann::ordered_json& out) const;

    static nlohmann::ordered_json empty_chat();        // {"content": [], "refusal": null}
    static nlohmann::ordered_json empty_completion();  // {"tokens": [], "token_logprobs": [], ...}

private:
    std::string token_text(int32_t id, nlohmann::ordered_json* bytes) const;

    const tokenizer::Tokenizer& tokenizer_;
    int num_top_;
};

}  // namespace hichat::api
