#include "api/openai_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "api/openai_fields.h"
#include "api/text_input.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

std::string fmt(double d) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", d);
    return buf;
}

// "must be in [lo, hi]" for an integer field; `got` is the value as the client wrote it.
std::string range_message(const std::string& name, int64_t lo, uint64_t hi, const std::string& got) {
    return name + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + got;
}

struct Parser {
    const Json& body;
    GenerationRequest& out;
    std::optional<ApiError> error;

    bool failed() const { return error.has_value(); }
    void fail(std::string param, std::string message) {
        if (!error) error = bad_field(std::move(param), std::move(message));
    }
    void fail(ApiError e) {
        if (!error) error = std::move(e);
    }

    const Json* field(const char* name) const {
        auto it = body.find(name);
        return it == body.end() || it->is_null() ? nullptr : &*it;
    }

    // A number in [lo, hi], or (lo, hi] when lo_open.
    void number(const char* name, float& dst, double lo, double hi, bool lo_open = false) {
        const Json* v = field(name);
        if (v == nullptr) return;
        if (!v->is_number()) return fail(name, std::string(name) + " must be a number");
        const double d = v->get<double>();
        const auto f = static_cast<float>(d);  // 1e-50 passes (0, 1] but is 0 as a float
        if (!std::isfinite(d) || (lo_open ? d <= lo || f <= lo : d < lo) || d > hi) {
            return fail(name, std::string(name) + " must be in " + (lo_open ? "(" : "[") + fmt(lo) + ", " + fmt(hi) +
                                  "], got " + v->dump());
        }
        dst = f;
    }

    // An integer in [lo, hi], as its 64 bits (a negative one in two's complement). Literals beyond 64
    // bits reach us as floats: they get the range message, never a wrapped-around number.
    std::optional<uint64_t> integer_bits(const char* name, int64_t lo, uint64_t hi) {
        const Json* v = field(name);
        if (v == nullptr) return std::nullopt;
        const std::string n = name;
        if (!v->is_number_integer()) {
            const double d = v->is_number_float() ? v->get<double>() : 0.0;
            const bool beyond_64_bits = std::isfinite(d) && std::floor(d) == d && (d >= 0x1p64 || d < -0x1p63);
            fail(n, beyond_64_bits ? range_message(n, lo, hi, v->dump()) : n + " must be an integer, got " + v->dump());
            return std::nullopt;
        }
        if (v->is_number_unsigned()) {
            const auto u = v->get<uint64_t>();
            if ((lo > 0 && u < static_cast<uint64_t>(lo)) || u > hi) {
                fail(n, range_message(n, lo, hi, std::to_string(u)));
                return std::nullopt;
            }
            return u;
        }
        const auto i = v->get<int64_t>();
        if (i < lo || (i >= 0 && static_cast<uint64_t>(i) > hi)) {
            fail(n, range_message(n, lo, hi, std::to_string(i)));
            return std::nullopt;
        }
        return static_cast<uint64_t>(i);
    }

    void integer(const char* name, int64_t& dst, int64_t lo, int64_t hi) {
        if (auto bits = integer_bits(name, lo, static_cast<uint64_t>(hi))) dst = static_cast<int64_t>(*bits);
    }

    void boolean(const char* name, bool& dst) {
        const Json* v = field(name);
        if (v == nullptr) return;
        if (!v->is_boolean()) return fail(name, std::string(name) + " must be a boolean");
        dst = v->get<bool>();
    }
};

// Content parts HiChat knows from the schema but does not implement yet.
bool is_unsupported_part_type(const std::string& type) {
    return type == "image_url" || type == "input_audio" || type == "file" || type == "refusal";
}

// One {"type": "text", "text": ...} part; keys outside the schema are ignored (and logged).
std::optional<std::string> text_part(const Json& part, const std::string& param, Parser& p) {
    if (!part.is_object()) {
        p.fail(param, param + " must be an object");
        return std::nullopt;
    }
    const auto type = part.find("type");
    if (type != part.end() && type->is_string() && is_unsupported_part_type(type->get<std::string>())) {
        ApiError e = unsupported_field(param, "");
        e.message = param + " is a content part of type " + type->get<std::string>() +
                    ", which HiChat does not support yet; only text parts are";
        p.fail(std::move(e));
        return std::nullopt;
    }
    if (type == part.end() || *type != "text" || !part.contains("text") || !part["text"].is_string()) {
        p.fail(param, param + " must be {\"type\": \"text\", \"text\": string}");
        return std::nullopt;
    }
    for (auto it = part.begin(); it != part.end(); ++it) {
        if (it.key() != "type" && it.key() != "text") p.out.ignored_fields.push_back(param + "." + it.key());
    }
    return part["text"].get<std::string>();
}

// "content" is a string or an array of text parts.
std::optional<std::string> message_content(const Json& content, const std::string& param, Parser& p) {
    if (content.is_string()) return content.get<std::string>();
    if (content.is_null()) return std::string();
    if (!content.is_array()) {
        p.fail(param, param + " must be a string or an array of text parts");
        return std::nullopt;
    }
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        auto part = text_part(content[i], param + "[" + std::to_string(i) + "]", p);
        if (!part) return std::nullopt;
        text += *part;
    }
    return text;
}

// The role of messages[i]: developer is system; tool messages carry the results of an assistant's tool
// calls (the deprecated function role is refused).
std::optional<std::string> message_role(const Json& m, const std::string& param, Parser& p) {
    const std::string role_param = param + ".role";
    if (!m.contains("role") || !m["role"].is_string()) {
        p.fail(role_param, role_param + " must be a string");
        return std::nullopt;
    }
    std::string role = m["role"].get<std::string>();
    if (role == "function") {
        ApiError e = unsupported_field(role_param, "");
        e.message = role_param + " \"function\" (deprecated) is not supported by HiChat; use tool messages";
        p.fail(std::move(e));
        return std::nullopt;
    }
    if (role != "system" && role != "user" && role != "assistant" && role != "developer" && role != "tool") {
        p.fail(role_param, role_param + " must be system, developer, user, assistant or tool");
        return std::nullopt;
    }
    return role == "developer" ? "system" : role;
}

// An assistant message's tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}].
// The template gets each arguments string as the JSON value it holds (as transformers' callers pass
// them), or as the string when it is not JSON.
void parse_tool_calls(const Json& calls, const std::string& param, tokenizer::ChatMessage& out, Parser& p) {
    if (!calls.is_array()) return p.fail(param, param + " must be an array of tool calls");
    if (calls.empty()) return;
    out.tool_calls = nlohmann::ordered_json::array();
    for (size_t j = 0; j < calls.size(); ++j) {
        const Json& c = calls[j];
        const std::string cp = param + "[" + std::to_string(j) + "]";
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) {
            return p.fail(cp, cp + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
        }
        if (c.contains("type") && c["type"] != "function") return p.fail(cp + ".type", cp + ".type must be \"function\"");
        const Json& f = c["function"];
        if (!f.contains("name") || !f["name"].is_string()) return p.fail(cp + ".function.name", cp + ".function.name must be a string");
        if (!f.contains("arguments") || !f["arguments"].is_string()) {
            return p.fail(cp + ".function.arguments", cp + ".function.arguments must be a string (JSON text)");
        }
        const std::string text = f["arguments"].get<std::string>();
        nlohmann::ordered_json args = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (args.is_discarded()) args = text;
        nlohmann::ordered_json call = {{"id", c.contains("id") && c["id"].is_string() ? c["id"].get<std::string>() : ""},
                                       {"type", "function"},
                                       {"function", {{"name", f["name"].get<std::string>()}, {"arguments", std::move(args)}}}};
        out.tool_calls.push_back(std::move(call));
    }
}

void parse_messages(Parser& p) {
    const Json* messages = p.field("messages");
    if (messages == nullptr) return p.fail("messages", "messages is required");
    if (!messages->is_array() || messages->empty()) return p.fail("messages", "messages must be a non-empty array");
    for (size_t i = 0; i < messages->size() && !p.failed(); ++i) {
        const Json& m = (*messages)[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return p.fail(param, param + " must be an object");
        auto role = message_role(m, param, p);
        if (!role) return;
        if (auto e = check_fields(FieldScope::kMessage, m, param, p.out.ignored_fields)) return p.fail(std::move(*e));
        auto content = message_content(m.contains("content") ? m["content"] : Json(), param + ".content", p);
        if (!content) return;
        tokenizer::ChatMessage message{*role, strip_control_chars(*content)};
        const auto calls = m.find("tool_calls");
        if (calls != m.end() && !calls->is_null()) {
            if (*role != "assistant") return p.fail(param + ".tool_calls", param + ".tool_calls is only for assistant messages");
            parse_tool_calls(*calls, param + ".tool_calls", message, p);
        }
        const auto call_id = m.find("tool_call_id");
        if (*role == "tool") {
            if (call_id == m.end() || !call_id->is_string() || call_id->get<std::string>().empty()) {
                return p.fail(param + ".tool_call_id", param + ".tool_call_id must be the id of the call this message answers");
            }
            message.tool_call_id = call_id->get<std::string>();
        } else if (call_id != m.end() && !call_id->is_null()) {
            return p.fail(param + ".tool_call_id", param + ".tool_call_id is only for tool messages");
        }
        p.out.messages.push_back(std::move(message));
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
            if (!id.is_number_unsigned() || id.get<uint64_t>() > INT32_MAX) {
                return p.fail("prompt", "prompt token ids must be integers in [0, 2147483647], got " + id.dump());
            }
            p.out.prompt_ids.push_back(id.get<int32_t>());
        }
        return;
    }
    p.fail("prompt", "prompt must be a string, an array of one string, or an array of token ids");
}

// Completions `echo`: the prompt comes back before the completion (with its logprobs when logprobs is
// asked); max_tokens may then be 0, for the prompt alone (how evaluation harnesses score text).
void parse_echo(Parser& p) {
    if (p.out.endpoint != Endpoint::kCompletions) return;
    p.boolean("echo", p.out.echo);
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
    p.number("top_p", s.top_p, 0.0, 1.0, /*lo_open=*/true);
    p.number("min_p", s.min_p, 0.0, 1.0);
    p.number("presence_penalty", s.presence_penalty, -2.0, 2.0);
    p.number("frequency_penalty", s.frequency_penalty, -2.0, 2.0);
    p.number("repetition_penalty", s.repetition_penalty, 0.01, 10.0);
    int64_t top_k = 0;
    p.integer("top_k", top_k, -1, 1 << 30);
    s.top_k = top_k < 0 ? 0 : static_cast<int>(top_k);
    // Any 64-bit integer, signed or not: a negative seed is taken modulo 2^64 (-1 is 2^64 - 1).
    if (auto seed = p.integer_bits("seed", std::numeric_limits<int64_t>::min(), UINT64_MAX)) s.seed = *seed;
}

// Chat: `logprobs` (boolean) and `top_logprobs` (0-20; above 0 only with logprobs: true, as OpenAI
// refuses it otherwise). Completions: `logprobs` (0-5; null is not asking). The engine lists at most
// sampling::kMaxTopLogprobs (20) alternatives.
void parse_logprobs(Parser& p) {
    if (p.out.endpoint == Endpoint::kCompletions) {
        int64_t k = -1;
        p.integer("logprobs", k, 0, 5);
        if (p.field("logprobs") != nullptr && !p.failed()) p.out.num_logprobs = static_cast<int>(k);
        return;
    }
    bool logprobs = false;
    p.boolean("logprobs", logprobs);
    int64_t top = 0;
    p.integer("top_logprobs", top, 0, 20);
    if (p.failed()) return;
    if (top > 0 && !logprobs) return p.fail("top_logprobs", "top_logprobs requires logprobs: true");
    if (logprobs) p.out.num_logprobs = static_cast<int>(top);
}

// response_format (chat, and completions as vLLM takes it): {"type": "text"} | {"type": "json_object"} | {"type": "json_schema",
// "json_schema": {"name", "schema", "strict", "description"}}; `grammar` (both endpoints): a GBNF source.
// Only one of them. The schema or grammar compiles later (ConstrainedDecoding), on the same thread.
void parse_grammar(Parser& p) {
    if (const Json* g = p.field("grammar")) {
        if (!g->is_string() || g->get<std::string>().empty()) return p.fail("grammar", "grammar must be a non-empty GBNF string");
        p.out.grammar = GrammarSpec{.kind = grammar::GrammarKind::kGbnf, .text = g->get<std::string>(), .param = "grammar"};
    }
    const Json* rf = p.field("response_format");
    if (rf == nullptr) return;
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
        return p.fail("response_format", "response_format must be an object with a string type");
    }
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "text") return;
    if (p.out.grammar) return p.fail("response_format", "response_format and grammar cannot both be given");
    if (type == "json_object") {
        p.out.grammar = GrammarSpec{.kind = grammar::GrammarKind::kJsonObject, .param = "response_format"};
        return;
    }
    if (type != "json_schema") {
        return p.fail("response_format.type", "response_format.type must be text, json_object or json_schema, got \"" +
                                                  type + "\"");
    }
    auto js = rf->find("json_schema");
    if (js == rf->end() || !js->is_object()) {
        return p.fail("response_format.json_schema", "response_format.json_schema must be an object");
    }
    auto name = js->find("name");
    if (name != js->end() && !name->is_string()) {
        return p.fail("response_format.json_schema.name", "response_format.json_schema.name must be a string");
    }
    auto schema = js->find("schema");
    if (schema != js->end() && !schema->is_null() && !schema->is_object() && !schema->is_boolean()) {
        return p.fail("response_format.json_schema.schema", "response_format.json_schema.schema must be an object");
    }
    bool strict = false;
    if (auto s = js->find("strict"); s != js->end() && !s->is_null()) {
        if (!s->is_boolean()) return p.fail("response_format.json_schema.strict", "response_format.json_schema.strict must be a boolean");
        strict = s->get<bool>();
    }
    const bool any = schema == js->end() || schema->is_null();
    p.out.grammar = GrammarSpec{.kind = any ? grammar::GrammarKind::kJsonObject : grammar::GrammarKind::kJsonSchema,
                                .text = any ? std::string() : schema->dump(),
                                .strict = strict,
                                .param = "response_format.json_schema.schema"};
}

// A token id as OpenAI's logit_bias keys spell it: decimal digits, at most 2^31 - 1.
std::optional<int32_t> token_id_key(const std::string& key) {
    if (key.empty() || key.size() > 10 || !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    const int64_t v = std::stoll(key);
    if (v > INT32_MAX) return std::nullopt;
    return static_cast<int32_t>(v);
}

// {"token id": bias}: at most kMaxLogitBiasEntries, biases in [-100, 100], each token once. Whether the
// ids are in the vocabulary is the service's check (the parser knows no model).
void parse_logit_bias(Parser& p) {
    const Json* bias = p.field("logit_bias");
    if (bias == nullptr) return;
    if (!bias->is_object()) {
        return p.fail("logit_bias", "logit_bias must be an object mapping token ids (strings) to numbers in [-100, 100]");
    }
    if (bias->size() > static_cast<size_t>(kMaxLogitBiasEntries)) {
        return p.fail("logit_bias", "logit_bias may hold at most " + std::to_string(kMaxLogitBiasEntries) +
                                        " entries, got " + std::to_string(bias->size()));
    }
    std::vector<sampling::TokenBias>& out = p.out.sampling.logit_bias;
    for (auto it = bias->begin(); it != bias->end(); ++it) {
        const std::optional<int32_t> token = token_id_key(it.key());
        if (!token) {
            return p.fail("logit_bias", "logit_bias keys must be token ids (decimal integers in [0, 2147483647]), got " +
                                            Json(it.key().substr(0, 32)).dump(-1, ' ', false, Json::error_handler_t::replace));
        }
        const double v = it->is_number() ? it->get<double>() : NAN;
        if (!std::isfinite(v) || v < -kMaxLogitBias || v > kMaxLogitBias) {
            return p.fail("logit_bias", "logit_bias values must be numbers in [-100, 100], got " + it->dump() +
                                            " for token " + std::to_string(*token));
        }
        out.push_back({.token = *token, .bias = static_cast<float>(v)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.token < b.token; });
    for (size_t i = 1; i < out.size(); ++i) {
        if (out[i].token == out[i - 1].token) {
            return p.fail("logit_bias", "logit_bias names token " + std::to_string(out[i].token) + " twice");
        }
    }
}

void parse_limits_and_options(Parser& p) {
    int64_t max_tokens = -1;
    const char* max_name = p.field("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    p.integer(max_name, max_tokens, p.out.echo ? 0 : 1, INT32_MAX);
    if (max_tokens >= 0) p.out.max_tokens = static_cast<int>(max_tokens);
    p.out.max_tokens_field = max_name;
    int64_t n = 1;
    p.integer("n", n, 1, kMaxChoices);
    p.out.n = static_cast<int>(n);
    int64_t priority = 0;
    p.integer("priority", priority, -1000000, 1000000);
    p.out.priority = static_cast<int>(priority);
    p.boolean("stream", p.out.stream);
    p.boolean("ignore_eos", p.out.ignore_eos);
    if (const Json* opts = p.field("stream_options")) {
        if (!opts->is_object()) return p.fail("stream_options", "stream_options must be an object");
        if (auto e = check_fields(FieldScope::kStreamOptions, *opts, "stream_options", p.out.ignored_fields)) {
            return p.fail(std::move(*e));
        }
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

// The deepest nesting of arrays and objects in `body`, scanning bytes (strings skipped) so that a body
// nested too deep is refused before any tree is built. Stops counting once past `limit`.
int json_depth(std::string_view body, int limit) {
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < body.size() && deepest <= limit; ++i) {
        const char c = body[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

// One line per request naming the keys outside the OpenAI schema (at most 16 names, each quoted and
// cut to 64 bytes: the names come from the client).
void log_ignored_fields(Endpoint endpoint, const std::vector<std::string>& fields) {
    std::string names;
    for (size_t i = 0; i < fields.size() && i < 16; ++i) {
        if (i > 0) names += ", ";
        names += Json(fields[i].substr(0, 64)).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    if (fields.size() > 16) names += " and " + std::to_string(fields.size() - 16) + " more";
    // stderr, where `hichat serve` writes its other messages; not registered, so tests may make several.
    static const auto logger =
        std::make_shared<spdlog::logger>("api", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->warn("{}: ignored request fields outside the OpenAI schema: {}",
                 endpoint == Endpoint::kChatCompletions ? "/v1/chat/completions" : "/v1/completions", names);
}

// tools: [{"type": "function", "function": {"name", "description", "parameters", "strict"}}];
// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}} (default
// "auto" with tools, else "none"); parallel_tool_calls. The parameters are taken from the body again
// with their key order (parse_generation_request) and compile in OpenAiService, which names
// tools[i].function.parameters when one is not a schema HiChat can enforce.
bool valid_function_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    }
    return true;
}

void parse_tools(Parser& p) {
    ToolRequest& t = p.out.tools;
    if (const Json* tools = p.field("tools")) {
        if (!tools->is_array()) return p.fail("tools", "tools must be an array of function tools");
        if (tools->size() > static_cast<size_t>(kMaxTools)) {
            return p.fail("tools", "tools has " + std::to_string(tools->size()) + " entries, over the limit of " +
                                       std::to_string(kMaxTools));
        }
        for (size_t i = 0; i < tools->size(); ++i) {
            const Json& tool = (*tools)[i];
            const std::string param = "tools[" + std::to_string(i) + "]";
            if (!tool.is_object()) return p.fail(param, param + " must be an object");
            if (!tool.contains("type") || tool["type"] != "function") {
                ApiError e = unsupported_field(param + ".type", "");
                e.message = param + ".type must be \"function\" (HiChat supports function tools only)";
                return p.fail(std::move(e));
            }
            if (!tool.contains("function") || !tool["function"].is_object()) return p.fail(param + ".function", param + ".function must be an object");
            const Json& f = tool["function"];
            const std::string fp = param + ".function";
            if (!f.contains("name") || !f["name"].is_string() || !valid_function_name(f["name"].get<std::string>())) {
                return p.fail(fp + ".name", fp + ".name must be 1 to 64 letters, digits, '_' or '-'");
            }
            const std::string name = f["name"].get<std::string>();
            if (std::find(t.names.begin(), t.names.end(), name) != t.names.end()) {
                return p.fail(fp + ".name", fp + ".name \"" + name + "\" is given twice");
            }
            if (f.contains("description") && !f["description"].is_string()) return p.fail(fp + ".description", fp + ".description must be a string");
            if (f.contains("strict") && !f["strict"].is_boolean()) return p.fail(fp + ".strict", fp + ".strict must be a boolean");
            if (f.contains("parameters") && !f["parameters"].is_object()) {
                return p.fail(fp + ".parameters", fp + ".parameters must be a JSON Schema object");
            }
            t.names.push_back(name);
            t.strict.push_back(f.contains("strict") && f["strict"].get<bool>());
        }
    }
    p.boolean("parallel_tool_calls", t.parallel);
    t.choice.mode = t.names.empty() ? ToolChoiceMode::kNone : ToolChoiceMode::kAuto;
    if (const Json* c = p.field("tool_choice")) {
        if (*c == "none") {
            t.choice.mode = ToolChoiceMode::kNone;
        } else if (*c == "auto") {
            // auto without tools: no calls, as OpenAI
        } else if (*c == "required") {
            t.choice.mode = ToolChoiceMode::kRequired;
        } else if (c->is_object() && c->value("type", Json()) == "function" && c->contains("function") &&
                   (*c)["function"].is_object() && (*c)["function"].contains("name") && (*c)["function"]["name"].is_string()) {
            t.choice = {ToolChoiceMode::kNamed, (*c)["function"]["name"].get<std::string>()};
            if (std::find(t.names.begin(), t.names.end(), t.choice.name) == t.names.end()) {
                return p.fail("tool_choice", "tool_choice names function \"" + t.choice.name + "\", which is not in tools");
            }
        } else {
            return p.fail("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or "
                                         "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        if (t.choice.mode == ToolChoiceMode::kRequired && t.names.empty()) {
            return p.fail("tool_choice", "tool_choice \"required\" needs tools");
        }
    }
    const bool forced = t.choice.mode == ToolChoiceMode::kRequired || t.choice.mode == ToolChoiceMode::kNamed;
    if (forced && p.out.grammar) {
        return p.fail("tool_choice", "tool_choice \"required\" or a named function cannot be combined with " + p.out.grammar->param);
    }
    if (t.active() && p.out.num_logprobs >= 0) {
        ApiError e = unsupported_field("logprobs", "");
        e.message = "logprobs together with tools is not supported by HiChat yet";
        return p.fail(std::move(e));
    }
}

std::optional<ApiError> parse_fields(Endpoint endpoint, const Json& json, GenerationRequest& out) {
    const bool chat = endpoint == Endpoint::kChatCompletions;
    if (auto e = check_fields(chat ? FieldScope::kChat : FieldScope::kCompletions, json, "", out.ignored_fields)) {
        return e;
    }
    Parser p{json, out, std::nullopt};
    if (chat) {
        parse_messages(p);
    } else {
        parse_prompt(p);
        if (!p.failed()) parse_echo(p);
    }
    if (!p.failed()) parse_stop(p);
    if (!p.failed()) parse_sampling(p);
    if (!p.failed()) parse_logit_bias(p);
    if (!p.failed()) parse_limits_and_options(p);
    if (!p.failed()) parse_logprobs(p);
    if (!p.failed()) parse_grammar(p);
    if (!p.failed() && chat) parse_tools(p);
    return p.error;
}

}  // namespace

std::optional<ApiError> parse_json_object(std::string body, Json& json) {
    if (json_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
        ApiError e = bad_field("", "request body nests arrays and objects deeper than " +
                                       std::to_string(kMaxJsonDepth) + " levels");
        e.code = "json_too_deep";
        return e;
    }
    const bool had_invalid_utf8 = mark_invalid_utf8(body);
    json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return bad_field("", "request body is not valid JSON");
    if (!json.is_object()) return bad_field("", "request body must be a JSON object");
    if (had_invalid_utf8) {
        std::string field = find_marked_field(json, "");
        return bad_field(field, (field.empty() ? std::string("request body") : field) + " is not valid UTF-8");
    }
    return std::nullopt;
}

std::optional<ApiError> parse_generation_request(Endpoint endpoint, std::string body, GenerationRequest& out) {
    // A schema's properties are generated in the order the client wrote them, which nlohmann::json
    // (sorted keys) loses: the body is read again, keeping order, when it may hold one.
    std::string ordered_body;
    if (body.find("json_schema") != std::string::npos || body.find("\"tools\"") != std::string::npos) ordered_body = body;
    Json json;
    if (auto e = parse_json_object(std::move(body), json)) return e;
    out = GenerationRequest{};
    out.endpoint = endpoint;
    auto error = parse_fields(endpoint, json, out);
    if (!error && !ordered_body.empty()) {
        const auto ordered = nlohmann::ordered_json::parse(ordered_body, nullptr, /*allow_exceptions=*/false);
        if (out.grammar && out.grammar->kind == grammar::GrammarKind::kJsonSchema) {
            out.grammar->text = ordered["response_format"]["json_schema"]["schema"].dump();
        }
        if (!out.tools.names.empty()) {
            out.tools.tools = ordered["tools"];
            for (const auto& tool : out.tools.tools) {
                const auto& f = tool["function"];
                out.tools.parameters.push_back(f.contains("parameters") ? f["parameters"]
                                                                         : nlohmann::ordered_json{{"type", "object"}});
            }
        }
    }
    if (!error && !out.ignored_fields.empty()) log_ignored_fields(endpoint, out.ignored_fields);
    return error;
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
