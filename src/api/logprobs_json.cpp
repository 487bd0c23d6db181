#include "api/logprobs_json.h"

#include <cmath>

namespace hichat::api {
namespace {

using Json = nlohmann::ordered_json;

double logprob_value(float v) { return std::isfinite(v) ? static_cast<double>(v) : -9999.0; }

// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD (one per maximal invalid prefix).
std::string valid_utf8(const std::string& bytes) {
    std::string out;
    size_t i = 0;
    while (i < bytes.size()) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        const int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        bool ok = len > 0 && i + static_cast<size_t>(len) <= bytes.size();
        for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(bytes[i + k]) & 0xc0) == 0x80;
        if (ok && len > 1) {  // overlong forms, surrogates and code points past U+10FFFF are invalid too
            uint32_t cp = c & (0xff >> (len + 1));
            for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(bytes[i + k]) & 0x3f);
            static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
            ok = cp >= kMin[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
        }
        if (ok) {
            out.append(bytes, i, static_cast<size_t>(len));
            i += static_cast<size_t>(len);
        } else {
            out += "\xef\xbf\xbd";
            ++i;
        }
    }
    return out;
}

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
    return valid_utf8(raw);
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

Json LogprobsJson::empty_chat() { return {{"content", Json::array()}, {"refusal", nullptr}}; }

Json LogprobsJson::empty_completion() {
    return {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
            {"text_offset", Json::array()}};
}

}  // namespace hichat::api
