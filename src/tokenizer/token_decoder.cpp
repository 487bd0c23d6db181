#include "tokenizer/token_decoder.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_pattern.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace hichat::tokenizer {
namespace {

enum class Kind { kByteLevel, kReplace, kByteFallback, kStrip, kMetaspace };

struct Step {
    Kind kind;
    std::shared_ptr<Regex> regex;  // Replace
    std::string text;              // Replace: content; Strip: character; Metaspace: replacement
    size_t start = 0, stop = 0;    // Strip
};

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// "<0xAB>" -> the byte 0xAB; otherwise returns false.
bool parse_byte_token(std::string_view token, char& byte) {
    if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return false;
    const int hi = hex_value(token[3]), lo = hex_value(token[4]);
    if (hi < 0 || lo < 0) return false;
    byte = static_cast<char>(hi * 16 + lo);
    return true;
}

std::string strip_each(std::string s, const std::string& content, size_t start, size_t stop) {
    if (content.empty()) return s;
    for (size_t i = 0; i < start && s.compare(0, content.size(), content) == 0; ++i) s.erase(0, content.size());
    for (size_t i = 0; i < stop && s.size() >= content.size() &&
                       s.compare(s.size() - content.size(), content.size(), content) == 0;
         ++i) {
        s.resize(s.size() - content.size());
    }
    return s;
}

std::string apply_steps(const std::vector<Step>& steps, std::string s, bool is_added) {
    for (const Step& step : steps) {
        switch (step.kind) {
            case Kind::kByteLevel: {
                std::string bytes;
                if (!is_added && byte_level_to_bytes(s, bytes)) s = std::move(bytes);
                break;
            }
            case Kind::kReplace: s = replace_all(*step.regex, s, step.text); break;
            case Kind::kByteFallback: {
                char byte;
                if (parse_byte_token(s, byte)) s = std::string(1, byte);
                break;
            }
            case Kind::kStrip: s = strip_each(std::move(s), step.text, step.start, step.stop); break;
            case Kind::kMetaspace: {
                std::string out;
                for (size_t pos = s.find(step.text), begin = 0;; pos = s.find(step.text, begin)) {
                    out.append(s, begin, pos == std::string::npos ? std::string::npos : pos - begin);
                    if (pos == std::string::npos) break;
                    out.push_back(' ');
                    begin = pos + step.text.size();
                }
                s = std::move(out);
                break;
            }
        }
    }
    return s;
}

}  // namespace

struct TokenDecoder::Config {
    std::vector<Step> per_token;  // applied to each token in advance
    bool fused = false;           // a Fuse step was seen: later Strips act on the whole text
    bool strip_first_space = false;
    std::string strip_content;
    size_t strip_left = 0, strip_right = 0;

    Status add(const nlohmann::json& config) {
        if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
            return invalid_argument("decoder must be an object with a \"type\", got " + config.dump().substr(0, 200));
        }
        const std::string type = config["type"].get<std::string>();
        if (type == "Sequence") {
            if (!config.contains("decoders") || !config["decoders"].is_array()) {
                return invalid_argument("decoder Sequence needs a \"decoders\" array");
            }
            for (const auto& sub : config["decoders"]) HICHAT_RETURN_IF_ERROR(add(sub));
        } else if (type == "ByteLevel") {
            per_token.push_back({Kind::kByteLevel, nullptr, {}});
        } else if (type == "ByteFallback") {
            per_token.push_back({Kind::kByteFallback, nullptr, {}});
        } else if (type == "Fuse") {
            fused = true;
        } else if (type == "Replace") {
            if (!config.contains("pattern") || !config.contains("content") || !config["content"].is_string()) {
                return invalid_argument("decoder Replace needs \"pattern\" and a \"content\" string");
            }
            auto regex = parse_pattern(config["pattern"]);
            if (!regex.ok()) return invalid_argument("decoder Replace: " + regex.status().message());
            per_token.push_back({Kind::kReplace, std::move(regex).value(), config["content"].get<std::string>()});
        } else if (type == "Strip") {
            return add_strip(config);
        } else if (type == "Metaspace") {
            auto it = config.find("replacement");
            if (it == config.end() || !it->is_string()) return invalid_argument("decoder Metaspace needs a \"replacement\"");
            per_token.push_back({Kind::kMetaspace, nullptr, it->get<std::string>()});
            const bool add_prefix_space = config.value("add_prefix_space", true);
            strip_first_space = add_prefix_space && config.value("prepend_scheme", std::string("always")) != "never";
        } else {
            return unimplemented("decoder type \"" + type + "\" is not supported");
        }
        return ok_status();
    }

    Status add_strip(const nlohmann::json& config) {
        auto content = config.find("content");
        auto count = [&](const char* name) -> int64_t {
            auto it = config.find(name);
            if (it == config.end()) return 0;
            return it->is_number_integer() ? it->get<int64_t>() : -1;
        };
        if (content == config.end() || !content->is_string() || count("start") < 0 || count("stop") < 0) {
            return invalid_argument("decoder Strip needs a \"content\" string and non-negative \"start\"/\"stop\"");
        }
        const auto start = static_cast<size_t>(count("start")), stop = static_cast<size_t>(count("stop"));
        if (!fused) {
            per_token.push_back({Kind::kStrip, nullptr, content->get<std::string>(), start, stop});
            return ok_status();
        }
        if (!strip_content.empty() && strip_content != content->get<std::string>()) {
            return unimplemented("decoder: two whole-text Strip steps with different content");
        }
        strip_content = content->get<std::string>();
        strip_left += start;
        strip_right += stop;
        return ok_status();
    }
};

Result<TokenDecoder> TokenDecoder::from_json(const nlohmann::json& config, const std::vector<std::string>& id_to_token,
                                             const std::vector<bool>& is_added) {
    Config parsed;
    if (!config.is_null()) HICHAT_RETURN_IF_ERROR(parsed.add(config));
    TokenDecoder decoder;
    decoder.strip_first_space_ = parsed.strip_first_space;
    decoder.strip_content_ = parsed.strip_content;
    decoder.strip_left_ = parsed.strip_content.empty() ? 0 : parsed.strip_left;
    decoder.strip_right_ = parsed.strip_content.empty() ? 0 : parsed.strip_right;
    decoder.piece_offsets_.reserve(id_to_token.size() + 1);
    decoder.piece_offsets_.push_back(0);
    for (size_t id = 0; id < id_to_token.size(); ++id) {
        decoder.piece_data_ += apply_steps(parsed.per_token, id_to_token[id], id < is_added.size() && is_added[id]);
        decoder.piece_offsets_.push_back(static_cast<uint32_t>(decoder.piece_data_.size()));
    }
    return decoder;
}

std::string_view TokenDecoder::piece(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= num_ids()) return {};
    return std::string_view(piece_data_).substr(piece_offsets_[id], piece_offsets_[id + 1] - piece_offsets_[id]);
}

void TokenDecoder::append(int32_t id, DecodeState& state, std::string& out) const {
    if (id < 0 || static_cast<size_t>(id) >= num_ids()) return;
    std::string_view bytes = piece(id);
    if (state.num_tokens == 0 && strip_first_space_ && !bytes.empty() && bytes.front() == ' ') bytes.remove_prefix(1);
    ++state.num_tokens;
    emit_bytes(bytes, state, out);
}

void TokenDecoder::emit_bytes(std::string_view bytes, DecodeState& state, std::string& out) const {
    if (!state.started) {
        state.started = true;
        state.num_strip_left = strip_left_;
    }
    while (state.num_strip_left > 0 && !bytes.empty() && bytes.substr(0, strip_content_.size()) == strip_content_) {
        bytes.remove_prefix(strip_content_.size());
        --state.num_strip_left;
    }
    if (!bytes.empty()) state.num_strip_left = 0;  // the text has begun
    if (strip_right_ == 0) {
        state.pending_utf8.append(bytes);
    } else {
        // Hold back the trailing run of strip characters (at most strip_right_ of them).
        std::string combined = std::move(state.held_strip_right);
        combined.append(bytes);
        size_t keep = combined.size();
        for (size_t n = 0; n < strip_right_ && keep >= strip_content_.size() &&
                           combined.compare(keep - strip_content_.size(), strip_content_.size(), strip_content_) == 0;
             ++n) {
            keep -= strip_content_.size();
        }
        state.held_strip_right = combined.substr(keep);
        state.pending_utf8.append(combined, 0, keep);
    }
    const size_t consumed = append_lossy_utf8(state.pending_utf8, /*final=*/false, out);
    state.pending_utf8.erase(0, consumed);
}

void TokenDecoder::finish(DecodeState& state, std::string& out) const {
    state.held_strip_right.clear();  // exactly what the final Strip removes
    append_lossy_utf8(state.pending_utf8, /*final=*/true, out);
    state.pending_utf8.clear();
}

}  // namespace hichat::tokenizer
