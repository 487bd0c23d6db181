#include "api/logprobs_json.h"

#include <cmath>

#include "tokenizer/utf8.h"

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

double logprob_value(float v) { return std::isfinite(v) ? static_cast<double>(v) : -9999.0; }

int64_t code_points(const std::string& utf8) {
    int64_t n = 0;
    for (unsigned char c : utf8) n += (c & 0xc0) != 0x80;
    return n;
}

}  // namespace

std::string LogprobsJson::token_text(int32_t id, Json* bytes) const {
    const std::string raw = tokenizer_.token_bytes(id);
    if (bytes != nullptr) {
        *bytes = Json::array();
        for (unsigned char c : raw) bytes->push_back(static_cast<int>(c));
    }
    return tokenizer::to_valid_utf8(raw);
}

void LogprobsJson::append_chat(std::span<const int32_t> ids, std::span<const sampling::TokenLogprobs> logprobs,
                               Json& content) const {
    for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
        const sampling::TokenLogprobs& lp = logprobs[i];
        Json bytes;
        const std::string text = token_text(ids[i], &bytes);
        Json top = Json::array();
        for (int k = 0; k < lp.num_top && k < num_top_; ++k) {
            Json top_bytes;
            const std::string t = token_text(lp.top_ids[static_cast<size_t>(k)], &top_bytes);
            top.push_back({{"token", t},
                           {"logprob", logprob_value(lp.top_logprobs[static_cast<size_t>(k)])},
                           {"bytes", std::move(top_bytes)}});
        }
        content.push_back({{"token", text},
                           {"logprob", logprob_value(lp.chosen)},
                           {"bytes", std::move(bytes)},
                           {"top_logprobs", std::move(top)}});
    }
}

void LogprobsJson::append_completion(std::span<const int32_t> ids, std::span<const sampling::TokenLogprobs> logprobs,
                                     int64_t& text_offset, Json& out) const {
    for (size_t i = 0; i < ids.size() && i < logprobs.size(); ++i) {
        const sampling::TokenLogprobs& lp = logprobs[i];
        const std::string text = token_text(ids[i], nullptr);
        Json top = Json::object();
        bool has_chosen = false;
        for (int k = 0; k < lp.num_top && k < num_top_; ++k) {
            const int32_t id = lp.top_ids[static_cast<size_t>(k)];
            has_chosen |= id == ids[i];
            const std::string t = token_text(id, nullptr);
            if (!top.contains(t)) top[t] = logprob_value(lp.top_logprobs[static_cast<size_t>(k)]);
        }
        if (!has_chosen && !top.contains(text)) top[text] = logprob_value(lp.chosen);
        out["tokens"].push_back(text);
        out["token_logprobs"].push_back(logprob_value(lp.chosen));
        out["top_logprobs"].push_back(std::move(top));
        out["text_offset"].push_back(text_offset);
        text_offset += code_points(text);
    }
}

void LogprobsJson::append_completion_prompt(std::span<const int32_t> ids,
                                            std::span<const sampling::TokenLogprobs> prompt_logprobs,
                                            const std::string& prompt_text, int64_t& text_offset, Json& out) const {
    int64_t offset = 0;
    if (!ids.empty()) {
        const std::string text = token_text(ids[0], nullptr);
        out["tokens"].push_back(text);
        out["token_logprobs"].push_back(nullptr);
        out["top_logprobs"].push_back(nullptr);
        out["text_offset"].push_back(offset);
        offset += code_points(text);
        append_completion(ids.subspan(1), prompt_logprobs, offset, out);
    }
    text_offset = code_points(prompt_text);
}

Json LogprobsJson::empty_chat() { return {{"content", Json::array()}, {"refusal", nullptr}}; }

Json LogprobsJson::empty_completion() {
    return {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
            {"text_offset", Json::array()}};
}

}  // namespace hichat::api
