#include "api/openai_request.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "api/text_input.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

struct Parser {
    const Json& body;
    GenerationRequest& out;
    std::optional<ApiError> error;

    bool failed() const { return error.has_value(); }
    void fail(std::string param, std::string message) {
        if (!error) error = bad_field(std::move(param), std::move(message));
    }

    const Json* field(const char* name) const {
        auto it = body.find(name);
        return it == body.end() || it->is_null() ? nullptr : &*it;
    }

    void number(const char* name, float& dst, double lo, double hi) {
        const Json* v = field(name);
        if (v == nullptr) return;
        if (!v->is_number()) return fail(name, std::string(name) + " must be a number");
        double d = v->get<double>();
        if (!std::isfinite(d) || d < lo || d > hi) {
            return fail(name, std::string(name) + " must be in [" + fmt(lo) + ", " + fmt(hi) + "], got " + v->dump());
        }
        dst = static_cast<float>(d);
    }

    void integer(const char* name, int64_t& dst, int64_t lo, int64_t hi) {
        const Json* v = field(name);
        if (v == nullptr) return;
        if (!v->is_number_integer()) return fail(name, std::string(name) + " must be an integer");
        auto i = v->get<int64_t>();
        if (i < lo || i > hi) {
            return fail(name, std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "], got " + std::to_string(i));
        }
        dst = i;
    }

    void boolean(const char* name, bool& dst) {
        const Json* v = field(name);
        if (v == nullptr) return;
        if (!v->is_boolean()) return fail(name, std::string(name) + " must be a boolean");
        dst = v->get<bool>();
    }

    static std::string fmt(double d) {
        std::string s = std::to_string(d);
        s.erase(s.find_last_not_of('0') + 1);
        if (!s.empty() && s.back() == '.') s.pop_back();
        return s;
    }
};

// "content" is a string or an array of {"type": "text", "text": ...} parts.
std::optional<std::string> message_content(const Json& content, const std::string& param, Parser& p) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return std::string();
    if (!content.is_array()) {
        p.fail(param, param + " must be a string or an array of text parts");
        return std::nullopt;
    }
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const Json& part = content[i];
        const std::string part_param = param + "[" + std::to_string(i) + "]";
        // (Not part.value("type", ""): it throws when "type" is there but not a string.)
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
            p.fail(part_param, part_param + " must be {\"type\": \"text\", \"text\": string}; other parts are not supported");
            return std::nullopt;
        }
        text += part["text"].get<std::string>();
    }
    return text;
}

void parse_messages(Parser& p) {
    const Json* messages = p.field("messages");
    if (messages == nullptr) return p.fail("messages", "messages is required");
    if (!messages->is_array() || messages->empty()) return p.fail("messages", "messages must be a non-empty array");
    for (size_t i = 0; i < messages->size() && !p.failed(); ++i) {
        const Json& m = (*messages)[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return p.fail(param, param + " must be an object");
        if (!m.contains("role") || !m["role"].is_string()) return p.fail(param + ".role", param + ".role must be a string");
        std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant" && role != "developer" && role != "tool") {
            return p.fail(param + ".role", param + ".role must be system, developer, user, assistant or tool");
        }
        auto content = message_content(m.contains("content") ? m["content"] : Json(), param + ".content", p);
        if (!content) return;
        p.out.messages.push_back({role == "developer" ? "system" : role, strip_control_chars(*content)});
    }
}

void parse_prompt(Parser& p) {
    const Json* prompt = p.field("prompt");
    if (prompt == nullptr) return p.fail("prompt", "prompt is required");
    if (prompt->is_string()) {
        p.out.prompt = strip_control_chars(prompt->get<std::string>());
        return;
    }
    if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
        p.out.prompt = strip_control_chars((*prompt)[0].get<std::string>());
        return;
    }
    if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number_integer()) {
        for (const Json& id : *prompt) {
            if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
                return p.fail("prompt", "prompt token ids must be non-negative integers");
            }
            p.out.prompt_ids.push_back(id.get<int32_t>());
        }
        return;
    }
    p.fail("prompt", "prompt must be a string, an array of one string, or an array of token ids");
}

void parse_stop(Parser& p) {
    const Json* stop = p.field("stop");
    if (stop == nullptr) return;
    if (stop->is_string()) {
        if (!stop->get<std::string>().empty()) p.out.stop.push_back(stop->get<std::string>());
        return;
    }
    if (!stop->is_array() || stop->size() > 16) return p.fail("stop", "stop must be a string or an array of up to 16 strings");
    for (const Json& s : *stop) {
        if (!s.is_string()) return p.fail("stop", "stop must contain only strings");
        if (!s.get<std::string>().empty()) p.out.stop.push_back(s.get<std::string>());
    }
}

void parse_sampling(Parser& p) {
    sampling::SamplingParams& s = p.out.sampling;
    p.number("temperature", s.temperature, 0.0, 2.0);
    p.number("top_p", s.top_p, 0.0, 1.0);
    if (!p.failed() && s.top_p == 0.0f) p.fail("top_p", "top_p must be in (0, 1]");
    p.number("min_p", s.min_p, 0.0, 1.0);
    p.number("presence_penalty", s.presence_penalty, -2.0, 2.0);
    p.number("frequency_penalty", s.frequency_penalty, -2.0, 2.0);
    p.number("repetition_penalty", s.repetition_penalty, 0.01, 10.0);
    int64_t top_k = 0;
    p.integer("top_k", top_k, -1, 1 << 30);
    s.top_k = top_k < 0 ? 0 : static_cast<int>(top_k);
    if (const Json* seed = p.field("seed")) {
        if (!seed->is_number_integer()) return p.fail("seed", "seed must be an integer");
        s.seed = static_cast<uint64_t>(seed->get<int64_t>());
    }
}

void parse_limits_and_options(Parser& p) {
    int64_t max_tokens = -1;
    const char* max_name = p.field("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    p.integer(max_name, max_tokens, 1, INT32_MAX);
    if (max_tokens > 0) p.out.max_tokens = static_cast<int>(max_tokens);
    int64_t n = 1;
    p.integer("n", n, 1, 128);
    if (!p.failed() && n != 1) p.fail("n", "n other than 1 is not supported yet");
    int64_t priority = 0;
    p.integer("priority", priority, -1000000, 1000000);
    p.out.priority = static_cast<int>(priority);
    p.boolean("stream", p.out.stream);
    p.boolean("ignore_eos", p.out.ignore_eos);
    if (const Json* opts = p.field("stream_options")) {
        if (!opts->is_object()) return p.fail("stream_options", "stream_options must be an object");
        if (opts->contains("include_usage")) {
            if (!(*opts)["include_usage"].is_boolean()) {
                return p.fail("stream_options.include_usage", "stream_options.include_usage must be a boolean");
            }
            p.out.include_usage = (*opts)["include_usage"].get<bool>();
        }
    }
    if (const Json* model = p.field("model")) {
        if (!model->is_string()) return p.fail("model", "model must be a string");
        p.out.model = model->get<std::string>();
    }
    if (const Json* user = p.field("user")) {
        if (!user->is_string()) return p.fail("user", "user must be a string");
        p.out.user = user->get<std::string>();
    }
}

// Finds the string field holding the invalid-UTF-8 marker, as a param path. Looks no deeper than
// kMaxMarkedFieldDepth levels ("" then: the error names the body), so that a deeply nested body
// cannot exhaust the I/O thread's stack.
constexpr int kMaxMarkedFieldDepth = 64;
std::string find_marked_field(const Json& j, const std::string& path, int depth = 0) {
    if (depth > kMaxMarkedFieldDepth) return "";
    if (j.is_string()) return j.get<std::string>().find(kInvalidUtf8Marker) != std::string::npos ? path : "";
    if (j.is_array()) {
        for (size_t i = 0; i < j.size(); ++i) {
            auto f = find_marked_field(j[i], path + "[" + std::to_string(i) + "]", depth + 1);
            if (!f.empty()) return f;
        }
    }
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (it.key().find(kInvalidUtf8Marker) != std::string::npos) return path.empty() ? it.key() : path;
            auto f = find_marked_field(it.value(), path.empty() ? it.key() : path + "." + it.key(), depth + 1);
            if (!f.empty()) return f;
        }
    }
    return "";
}

}  // namespace

std::optional<ApiError> parse_generation_request(Endpoint endpoint, std::string body, GenerationRequest& out) {
    const bool had_invalid_utf8 = mark_invalid_utf8(body);
    Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return bad_field("", "request body is not valid JSON");
    if (!json.is_object()) return bad_field("", "request body must be a JSON object");
    if (had_invalid_utf8) {
        std::string field = find_marked_field(json, "");
        return bad_field(field, (field.empty() ? std::string("request body") : field) + " is not valid UTF-8");
    }
    out = GenerationRequest{};
    out.endpoint = endpoint;
    Parser p{json, out, std::nullopt};
    if (endpoint == Endpoint::kChatCompletions) {
        parse_messages(p);
    } else {
        parse_prompt(p);
    }
    if (!p.failed()) parse_stop(p);
    if (!p.failed()) parse_sampling(p);
    if (!p.failed()) parse_limits_and_options(p);
    return p.error;
}

std::string ApiError::to_json() const {
    Json j = {{"error",
               {{"message", message},
                {"type", type},
                {"param", param.empty() ? Json(nullptr) : Json(param)},
                {"code", code.empty() ? Json(nullptr) : Json(code)}}}};
    return j.dump();
}

}  // namespace hichat::api
