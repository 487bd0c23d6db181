#include "tokenizer/normalizer.h"

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "tokenizer/json_pattern.h"
#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

std::string unicode_normalize(std::string_view text, int options) {
    // ASCII is invariant under every normalization form; skip the copy through utf8proc.
    bool all_ascii = true;
    for (const char c : text) all_ascii &= static_cast<uint8_t>(c) < 0x80;
    if (all_ascii) return std::string(text);
    utf8proc_uint8_t* result = nullptr;
    const utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                              static_cast<utf8proc_ssize_t>(text.size()), &result,
                                              static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
    if (len < 0) return std::string(text);  // only on invalid UTF-8, which callers never pass
    std::string out(reinterpret_cast<const char*>(result), static_cast<size_t>(len));
    std::free(result);
    return out;
}

std::string lowercase(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) append_utf8(utf8proc_tolower(next_code_point(text, pos)), out);
    return out;
}

}  // namespace

std::string replace_all(const Regex& regex, std::string_view text, std::string_view replacement) {
    Regex::Matcher matcher(regex);
    std::string out;
    size_t pos = 0;
    size_t begin = 0, end = 0;
    while (pos <= text.size() && matcher.find(text, pos, begin, end)) {
        out.append(text.substr(pos, begin - pos));
        out.append(replacement);
        if (end == begin) {  // empty match: keep one character and move on
            if (begin >= text.size()) {
                pos = text.size() + 1;
                break;
            }
            const size_t next = begin + utf8_sequence_length(static_cast<uint8_t>(text[begin]));
            out.append(text.substr(begin, next - begin));
            pos = next;
        } else {
            pos = end;
        }
    }
    if (pos < text.size()) out.append(text.substr(pos));
    return out;
}

Result<Normalizer> Normalizer::from_json(const nlohmann::json& config) {
    Normalizer normalizer;
    if (config.is_null()) return normalizer;
    HICHAT_RETURN_IF_ERROR(add_steps(config, normalizer.steps_));
    return normalizer;
}

Status Normalizer::add_steps(const nlohmann::json& config, std::vector<Step>& steps) {
    if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
        return invalid_argument("normalizer must be an object with a \"type\", got " + config.dump().substr(0, 200));
    }
    const std::string type = config["type"].get<std::string>();
    if (type == "Sequence") {
        if (!config.contains("normalizers") || !config["normalizers"].is_array()) {
            return invalid_argument("normalizer Sequence needs a \"normalizers\" array");
        }
        for (const auto& sub : config["normalizers"]) HICHAT_RETURN_IF_ERROR(add_steps(sub, steps));
        return ok_status();
    }
    if (type == "NFC") steps.push_back({Kind::kNfc, {}, nullptr});
    else if (type == "NFD") steps.push_back({Kind::kNfd, {}, nullptr});
    else if (type == "NFKC") steps.push_back({Kind::kNfkc, {}, nullptr});
    else if (type == "NFKD") steps.push_back({Kind::kNfkd, {}, nullptr});
    else if (type == "Lowercase") steps.push_back({Kind::kLowercase, {}, nullptr});
    else if (type == "Prepend") {
        if (!config.contains("prepend") || !config["prepend"].is_string()) {
            return invalid_argument("normalizer Prepend needs a \"prepend\" string");
        }
        steps.push_back({Kind::kPrepend, config["prepend"].get<std::string>(), nullptr});
    } else if (type == "Replace") {
        if (!config.contains("pattern") || !config.contains("content") || !config["content"].is_string()) {
            return invalid_argument("normalizer Replace needs \"pattern\" and a \"content\" string");
        }
        auto regex = parse_pattern(config["pattern"]);
        if (!regex.ok()) return invalid_argument("normalizer Replace: " + regex.status().message());
        steps.push_back({Kind::kReplace, config["content"].get<std::string>(), std::move(regex).value()});
    } else {
        return unimplemented("normalizer type \"" + type + "\" is not supported");
    }
    return ok_status();
}

std::string Normalizer::normalize(std::string_view text) const {
    std::string s(text);
    for (const Step& step : steps_) {
        switch (step.kind) {
            case Kind::kNfc: s = unicode_normalize(s, UTF8PROC_COMPOSE); break;
            case Kind::kNfd: s = unicode_normalize(s, UTF8PROC_DECOMPOSE); break;
            case Kind::kNfkc: s = unicode_normalize(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
            case Kind::kNfkd: s = unicode_normalize(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
            case Kind::kLowercase: s = lowercase(s); break;
            case Kind::kPrepend:
                if (!s.empty()) s = step.text + s;
                break;
            case Kind::kReplace: s = replace_all(*step.regex, s, step.text); break;
        }
    }
    return s;
}

}  // namespace hichat::tokenizer
