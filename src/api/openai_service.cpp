#include "api/openai_service.h"

#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "api/chat_page.h"
#include "api/generation_sink.h"

namespace hichat::api {
namespace {

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

OpenAiService::OpenAiService(ServiceConfig config) : config_(std::move(config)), id_salt_(std::random_device{}()) {}

void OpenAiService::attach(ServiceDeps deps) {
    deps_ = deps;
    ready_.store(true, std::memory_order_release);
}

void OpenAiService::add_routes(Router& router) {
    router.add("GET", "/health", [this](const HttpRequest& r, WriterPtr w) { handle_health(r, w); });
    router.add("GET", "/v1/models", [this](const HttpRequest& r, WriterPtr w) { handle_models(r, w); });
    router.add("GET", "/v1/models/*", [this](const HttpRequest& r, WriterPtr w) { handle_model(r, w); });
    router.add("GET", "/metrics", [this](const HttpRequest& r, WriterPtr w) { handle_metrics(r, w); });
    router.add("POST", "/v1/chat/completions",
               [this](const HttpRequest& r, WriterPtr w) { handle_generation(Endpoint::kChatCompletions, r, w); });
    router.add("POST", "/v1/completions",
               [this](const HttpRequest& r, WriterPtr w) { handle_generation(Endpoint::kCompletions, r, w); });
    router.add("GET", "/", [](const HttpRequest&, WriterPtr w) {
        w->send(200, "text/html; charset=utf-8", std::string(chat_page_html()));
    });
}

void OpenAiService::handle_health(const HttpRequest&, const WriterPtr& w) {
    if (ready()) {
        w->send(200, "application/json", R"({"status":"ok"})");
    } else {
        w->send(503, "application/json", R"({"status":"loading"})", {{"Retry-After", "5"}});
    }
}

void OpenAiService::handle_models(const HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    w->send(200, "application/json", R"({"object":"list","data":[)" + model_object_json() + "]}");
}

// The OpenAI SDK's models.retrieve(id); the id is percent-decoded (ids may hold '/').
void OpenAiService::handle_model(const HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    const std::string_view raw_id = std::string_view(req.path).substr(std::string_view("/v1/models/").size());
    const std::string id = percent_decode(raw_id).value_or(std::string(raw_id));
    if (id != config_.served_model_name) {
        return reply_error(req, w,
                           {.http_status = 404,
                            .message = "model '" + id + "' does not exist; this server serves '" +
                                       config_.served_model_name + "'",
                            .param = "model",
                            .code = "model_not_found"},
                           key);
    }
    w->send(200, "application/json", model_object_json());
}

std::string OpenAiService::model_object_json() const {
    nlohmann::json model = {{"id", config_.served_model_name},
                            {"object", "model"},
                            {"created", unix_seconds()},
                            {"owned_by", "hichat"},
                            {"max_model_len", deps_.engine->max_context_tokens()}};
    return model.dump();
}

void OpenAiService::handle_metrics(const HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    if (deps_.metrics == nullptr) return reply_error(req, w, {.http_status = 404, .message = "metrics are off"}, key);
    w->send(200, "text/plain; version=0.0.4; charset=utf-8", deps_.metrics->render());
}

bool OpenAiService::authenticate(const HttpRequest& req, const WriterPtr& w, std::optional<KeyId>& key) {
    if (deps_.keys == nullptr || deps_.keys->empty()) return true;
    auto header = req.headers.get("Authorization");
    key = header ? deps_.keys->authenticate(*header) : std::nullopt;
    if (key) {
        w->annotate(AccessRecord{.key_id = key});  // for the access log
        return true;
    }
    reply_error(req, w,
                {.http_status = 401,
                 .message = header ? "invalid API key" : "missing API key: send 'Authorization: Bearer <key>'",
                 .type = "authentication_error",
                 .code = "invalid_api_key"},
                std::nullopt, {{"WWW-Authenticate", "Bearer"}});
    return false;
}

std::optional<ApiError> OpenAiService::check_input(const GenerationRequest& g) const {
    if (!g.model.empty() && g.model != config_.served_model_name) {
        return ApiError{.http_status = 404,
                        .message = "model '" + g.model + "' does not exist; this server serves '" +
                                   config_.served_model_name + "'",
                        .param = "model",
                        .code = "model_not_found"};
    }
    if (deps_.input_filter == nullptr || deps_.input_filter->empty()) return std::nullopt;
    for (size_t i = 0; i < g.messages.size(); ++i) {
        if (auto hit = deps_.input_filter->find(g.messages[i].content)) {
            return bad_field("messages[" + std::to_string(i) + "].content", "content contains a blocked phrase");
        }
    }
    if (deps_.input_filter->find(g.prompt)) return bad_field("prompt", "prompt contains a blocked phrase");
    return std::nullopt;
}

std::optional<ApiError> OpenAiService::check_lengths(const GenerationRequest& g, int num_prompt_tokens,
                                                     int& max_tokens) const {
    const int context = deps_.engine->max_context_tokens();
    const char* prompt_field = g.endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
    if (num_prompt_tokens >= context) {
        return bad_field(prompt_field, "the prompt is " + std::to_string(num_prompt_tokens) +
                                           " tokens; this model's context is " + std::to_string(context) + " tokens");
    }
    const int room = context - num_prompt_tokens;
    if (g.max_tokens && *g.max_tokens > room) {
        return bad_field(g.max_tokens_field, g.max_tokens_field + " is " + std::to_string(*g.max_tokens) +
                                                 " but only " + std::to_string(room) + " tokens fit after the " +
                                                 std::to_string(num_prompt_tokens) + "-token prompt in the context of " +
                                                 std::to_string(context));
    }
    max_tokens = g.max_tokens.value_or(room);
    return std::nullopt;
}

// Validates, tokenizes and submits; the answer comes from the engine thread through a GenerationSink.
void OpenAiService::handle_generation(Endpoint endpoint, const HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    QuotaLease lease;
    if (deps_.quotas != nullptr && key) {
        Admission a = deps_.quotas->admit(*key, std::chrono::steady_clock::now());
        if (!a.ok) {
            return reply_error(req, w, {.http_status = 429, .message = a.reason, .type = "rate_limit_error",
                                        .code = "rate_limit_exceeded"},
                               key, {{"Retry-After", std::to_string(a.retry_after_s)}});
        }
        lease = QuotaLease(*deps_.quotas, *key);
    }
    GenerationRequest g;
    if (auto e = parse_generation_request(endpoint, req.body, g)) return reply_error(req, w, *e, key);
    if (auto e = check_input(g)) return reply_error(req, w, *e, key);
    if (auto e = g.sampling.validate(); !e.ok()) return reply_error(req, w, bad_field("", e.message()), key);
    std::vector<int32_t> prompt;
    if (auto e = deps_.prompts->build(g, prompt)) return reply_error(req, w, *e, key);
    int max_tokens = 0;
    if (auto e = check_lengths(g, static_cast<int>(prompt.size()), max_tokens)) return reply_error(req, w, *e, key);

    engine::Request r;
    r.id = {next_id_.fetch_add(1)};
    const std::string id = request_id_text(endpoint, r.id.value);
    r.prompt = std::move(prompt);
    r.sampling = g.sampling;
    r.max_tokens = max_tokens;
    r.stop = g.stop;
    if (!g.ignore_eos) r.stop_token_ids = deps_.eos_token_ids;
    r.priority = g.priority;
    if (config_.request_timeout_s > 0) r.deadline = r.arrival + std::chrono::seconds(config_.request_timeout_s);
    AccessRecord record{.ts = std::chrono::system_clock::now(), .request_id = id, .key_id = key,
                        .method = req.method, .path = req.target, .remote = req.remote};
    r.sink = std::make_shared<GenerationSink>(
        w, ResponseIds{id, unix_seconds(), config_.served_model_name, endpoint}, g.stream, g.include_usage,
        SinkContext{deps_.metrics, deps_.quotas}, std::move(record), std::move(lease));
    const engine::RequestId request_id = r.id;
    engine::Engine* engine = deps_.engine;
    switch (engine->submit(std::move(r))) {
        case engine::Engine::Admission::kAccepted:
            w->on_client_gone([engine, request_id] { engine->cancel(request_id); });
            return;
        case engine::Engine::Admission::kQueueFull:
            return reply_error(req, w, {.http_status = 429, .message = "the server is busy: request queue is full",
                                        .type = "rate_limit_error", .code = "queue_full"},
                               key, {{"Retry-After", "1"}});
        case engine::Engine::Admission::kStopped:
            return reply_error(req, w, {.http_status = 503, .message = "the server is shutting down", .type = "server_error"},
                               key, {{"Retry-After", "5"}});
    }
}

void OpenAiService::reply_error(const HttpRequest&, const WriterPtr& w, const ApiError& e,
                                std::optional<KeyId> key, HeaderList extra) {
    if (w->response_started()) return;
    // The exchange observer logs and counts it; the key (if any) goes with it.
    if (key) w->annotate(AccessRecord{.key_id = std::move(key)});
    w->send(e.http_status, "application/json", e.to_json(), std::move(extra));
}

std::string OpenAiService::request_id_text(Endpoint endpoint, uint64_t n) const {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%s-%08llx%08llx", endpoint == Endpoint::kChatCompletions ? "chatcmpl" : "cmpl",
                  static_cast<unsigned long long>(id_salt_ & 0xffffffffull),
                  static_cast<unsigned long long>(n));
    return buf;
}

}  // namespace hichat::api
