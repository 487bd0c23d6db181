#include "api/engine_admission.h"
#include "api/openai_service.h"

#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "api/chat_page.h"
#include "api/generation_sink.h"
#include "base/check.h"

namespace hichat::api {
namespace {

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Logged and counted like the engine's requests whose client left; nothing reaches the client.
ApiError client_closed_error() {
    return {.http_status = 499, .message = "the client closed the connection", .code = "client_closed"};
}

// "/v1/x/y" -> {"v1", "x", "y"}, each segment percent-decoded ("" when malformed).
std::vector<std::string> path_parts(const std::string& path) {
    std::vector<std::string> parts;
    for (size_t at = 1; at <= path.size();) {
        size_t end = path.find('/', at);
        if (end == std::string::npos) end = path.size();
        parts.push_back(percent_decode(std::string_view(path).substr(at, end - at)).value_or(""));
        at = end + 1;
    }
    return parts;
}

}  // namespace

struct OpenAiService::PendingGeneration {
    Endpoint endpoint;
    HttpRequest request;   // taken from the server's; the body moves on to the parser
    WriterPtr writer;
    std::optional<KeyId> key;
    QuotaLease lease;      // moves into the GenerationSink; released with the job otherwise
    engine::Clock::time_point arrival;
};

OpenAiService::OpenAiService(ServiceConfig config) : config_(std::move(config)), id_salt_(std::random_device{}()) {}

void OpenAiService::attach(ServiceDeps deps) {
    CHECK(deps.preprocess != nullptr) << "OpenAiService needs a PreprocessPool";
    deps_ = deps;
    if (deps_.sessions != nullptr) {
        responses_ = std::make_unique<ResponsesService>(SessionDeps{
            .engine = deps_.engine, .prompts = deps_.prompts, .store = deps_.sessions, .metrics = deps_.metrics,
            .quotas = deps_.quotas, .session_writer = deps_.session_writer, .input_filter = deps_.input_filter, .eos_token_ids = deps_.eos_token_ids,
            .served_model_name = config_.served_model_name, .model_fingerprint = deps_.model_fingerprint,
            .request_timeout_s = config_.request_timeout_s,
            .next_request_id = [this] { return engine::RequestId{next_id_.fetch_add(1)}; },
            .on_background_finished = deps_.on_background_response_finished,
            .owe_webhooks = deps_.owe_webhooks});
        conversations_ = std::make_unique<ConversationsService>(deps_.sessions);
        auto num_failed = responses_->fail_unfinished_background();
        if (!num_failed.ok()) {
            spdlog::error("background responses left unfinished by the last run stay as stored: {}",
                          num_failed.status().message());
        }
    }
    if (deps_.batches.store != nullptr) {
        CHECK(deps_.batches.folder != nullptr) << "the batch store needs a files folder";
        batch_runner_ = std::make_unique<BatchRunner>(
            deps_.batches.runner, *deps_.batches.store, *deps_.batches.folder,
            [this](Endpoint endpoint, std::string body, const std::string& owner, WriterPtr writer) {
                run_batch_line(endpoint, std::move(body), owner, std::move(writer));
            });
        files_ = std::make_unique<FilesService>(deps_.batches.store, deps_.batches.folder, deps_.batches.max_file_bytes);
        batches_ = std::make_unique<BatchesService>(deps_.batches.store, batch_runner_.get());
    }
    if (deps_.tokenizer != nullptr && deps_.engine != nullptr) {
        constrained_ = std::make_unique<ConstrainedDecoding>(*deps_.tokenizer, deps_.engine->model_config().vocab_size,
                                                             deps_.eos_token_ids);
    }
    ready_.store(true, std::memory_order_release);
    if (batch_runner_) batch_runner_->start();  // takes up the batches a restart left unfinished
}

void OpenAiService::stop_batches() {
    if (batch_runner_) batch_runner_->stop();
}

// Runner thread: the line is one more request to its endpoint, from its batch's owner, with no quota
// slot of its own (its tokens still count towards the key's tokens per minute).
void OpenAiService::run_batch_line(Endpoint endpoint, std::string body, const std::string& owner, WriterPtr writer) {
    const std::string path(endpoint_path(endpoint));
    HttpRequest request{.method = "POST", .target = path, .path = path, .body = std::move(body), .remote = "batch"};
    PendingGeneration job{endpoint, std::move(request), std::move(writer),
                          owner.empty() ? std::nullopt : std::optional<KeyId>(KeyId{owner}), QuotaLease(),
                          engine::Clock::now()};
    preprocess(job);
}

void OpenAiService::add_routes(Router& router) {
    router.add("GET", "/health", [this](const HttpRequest& r, WriterPtr w) { handle_health(r, w); });
    router.add("GET", "/v1/models", [this](const HttpRequest& r, WriterPtr w) { handle_models(r, w); });
    router.add("GET", "/v1/models/*", [this](const HttpRequest& r, WriterPtr w) { handle_model(r, w); });
    router.add("GET", "/metrics", [this](const HttpRequest& r, WriterPtr w) { handle_metrics(r, w); });
    router.add("POST", "/v1/chat/completions",
               [this](HttpRequest& r, WriterPtr w) { handle_generation(Endpoint::kChatCompletions, r, w); });
    router.add("POST", "/v1/completions",
               [this](HttpRequest& r, WriterPtr w) { handle_generation(Endpoint::kCompletions, r, w); });
    for (const char* method : {"GET", "POST", "DELETE"}) {
        for (const char* path : {"/v1/responses", "/v1/responses/*", "/v1/conversations", "/v1/conversations/*"}) {
            const bool collection = std::string_view(path).back() != '*';
            if (collection && std::string_view(method) != "POST") continue;  // create only
            router.add(method, path, [this](HttpRequest& r, WriterPtr w) { handle_session(r, w); });
        }
    }
    auto batch_api = [this](HttpRequest& r, WriterPtr w) { handle_batch_api(r, w); };
    router.add("POST", "/v1/files", batch_api);
    router.add("GET", "/v1/files", batch_api);
    router.add("GET", "/v1/files/*", batch_api);
    router.add("DELETE", "/v1/files/*", batch_api);
    router.add("POST", "/v1/batches", batch_api);
    router.add("GET", "/v1/batches", batch_api);
    router.add("GET", "/v1/batches/*", batch_api);
    router.add("POST", "/v1/batches/*", batch_api);
    router.add("GET", "/", [](const HttpRequest&, WriterPtr w) {
        w->send(200, "text/html; charset=utf-8", std::string(chat_page_html()));
    });
}

void OpenAiService::handle_health(const HttpRequest&, const WriterPtr& w) {
    if (ready()) {
        w->send(200, "application/json", R"({"status":"ok","load":)" + load_json(deps_.engine->stats()) + "}");
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
    w->send(200, "text/plain; version=0.0.4; charset=utf-8",
            deps_.metrics->render());
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
    const int vocab = deps_.engine->model_config().vocab_size;
    for (const sampling::TokenBias& b : g.sampling.logit_bias) {
        if (b.token >= vocab) {
            return bad_field("logit_bias", "logit_bias names token " + std::to_string(b.token) +
                                               ", outside this model's vocabulary [0, " + std::to_string(vocab) + ")");
        }
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

// The I/O thread's part of a generation request: admission only (API key, quota), then the request
// (its body moved, never copied) goes to the pool.
void OpenAiService::handle_generation(Endpoint endpoint, HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    QuotaLease lease;
    if (!admit_quota(req, w, key, lease)) return;
    auto job = std::make_shared<PendingGeneration>(
        PendingGeneration{endpoint, std::move(req), w, key, std::move(lease), engine::Clock::now()});
    const size_t cost = job->request.body.size();  // a small body takes the pool's small lane
    switch (deps_.preprocess->post([this, job] { preprocess(*job); }, cost)) {
        case PreprocessPool::Admission::kAccepted:
            return;
        case PreprocessPool::Admission::kQueueFull:
            return reply_error(job->request, w,
                               {.http_status = 429, .message = "the server is busy: preprocessing queue is full",
                                .type = "rate_limit_error", .code = "queue_full"},
                               key, {{"Retry-After", "1"}});
        case PreprocessPool::Admission::kStopped:
            return reply_error(job->request, w,
                               {.http_status = 503, .message = "the server is shutting down", .type = "server_error"},
                               key, {{"Retry-After", "5"}});
    }
}

// The I/O thread's part: admission (API key; quota for a new response), then the pool does the rest.
void OpenAiService::handle_session(HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    if (responses_ == nullptr) {
        return reply_error(req, w, {.http_status = 503, .message = "the session store is off", .type = "server_error"}, key);
    }
    QuotaLease lease;
    const bool generates = req.method == "POST" && req.path == "/v1/responses";
    if (generates && !admit_quota(req, w, key, lease)) return;
    post_store_job(req, w, std::move(key), std::move(lease), [this](SessionJob& job) { route_session(job); });
}

void OpenAiService::handle_batch_api(HttpRequest& req, const WriterPtr& w) {
    if (!ready()) return reply_error(req, w, {.http_status = 503, .message = "the model is loading", .type = "server_error"}, {});
    std::optional<KeyId> key;
    if (!authenticate(req, w, key)) return;
    if (batches_ == nullptr) {
        return reply_error(req, w, {.http_status = 503, .message = "the batch store is off", .type = "server_error"}, key);
    }
    const bool files = req.path == "/v1/files" || req.path.starts_with("/v1/files/");
    post_store_job(req, w, std::move(key), QuotaLease(), [this, files](SessionJob& job) {
        std::vector<std::string> parts = path_parts(job.request.path);
        if (files) return files_->route(job, parts);
        batches_->route(job, parts);
    });
}

void OpenAiService::post_store_job(HttpRequest& req, const WriterPtr& w, std::optional<KeyId> key, QuotaLease lease,
                                   std::function<void(SessionJob&)> route) {
    auto job = std::make_shared<SessionJob>(SessionJob{std::move(req), w, std::move(key), std::move(lease), engine::Clock::now()});
    switch (deps_.preprocess->post([job, route = std::move(route)] {
                if (job->writer->client_gone()) return job->reply_error(client_closed_error());
                try {
                    route(*job);
                } catch (const std::exception& e) {
                    job->reply_error({.http_status = 500, .message = std::string("internal error: ") + e.what(),
                                      .type = "server_error"});
                }
            }, job->request.body.size())) {
        case PreprocessPool::Admission::kAccepted:
            return;
        case PreprocessPool::Admission::kQueueFull:
            return job->reply_error({.http_status = 429, .message = "the server is busy: preprocessing queue is full",
                                     .type = "rate_limit_error", .code = "queue_full"});
        case PreprocessPool::Admission::kStopped:
            return job->reply_error({.http_status = 503, .message = "the server is shutting down", .type = "server_error"});
    }
}

// Pool thread: /v1/responses[/{id}[/input_items | /cancel]] and /v1/conversations[/{id}[/items[/{item_id}]]].
void OpenAiService::route_session(SessionJob& job) {
    const std::vector<std::string> parts = path_parts(job.request.path);
    const std::string& m = job.request.method;
    const size_t n = parts.size();  // parts[0] "v1", parts[1] "responses" | "conversations"
    const ApiError no_route{.http_status = 404, .message = "no route " + m + " " + job.request.path, .code = "not_found"};
    if (n < 2) return job.reply_error(no_route);
    if (parts[1] == "responses") {
        if (n == 2 && m == "POST") return responses_->create(job);
        if (n == 3 && m == "GET") return responses_->retrieve(job, parts[2]);
        if (n == 3 && m == "DELETE") return responses_->remove(job, parts[2]);
        if (n == 4 && m == "GET" && parts[3] == "input_items") return responses_->list_input_items(job, parts[2]);
        if (n == 4 && m == "POST" && parts[3] == "cancel") return responses_->cancel(job, parts[2]);
        return job.reply_error(no_route);
    }
    if (n == 2 && m == "POST") return conversations_->create(job);
    if (n == 3 && m == "GET") return conversations_->retrieve(job, parts[2]);
    if (n == 3 && m == "POST") return conversations_->update(job, parts[2]);
    if (n == 3 && m == "DELETE") return conversations_->remove(job, parts[2]);
    if (n == 4 && parts[3] == "items" && m == "POST") return conversations_->create_items(job, parts[2]);
    if (n == 4 && parts[3] == "items" && m == "GET") return conversations_->list_items(job, parts[2]);
    if (n == 5 && parts[3] == "items" && m == "GET") return conversations_->retrieve_item(job, parts[2], parts[4]);
    if (n == 5 && parts[3] == "items" && m == "DELETE") return conversations_->delete_item(job, parts[2], parts[4]);
    job.reply_error(no_route);
}

bool OpenAiService::admit_quota(const HttpRequest& req, const WriterPtr& w, const std::optional<KeyId>& key,
                                QuotaLease& lease) {
    if (deps_.quotas == nullptr || !key) return true;
    Admission a = deps_.quotas->admit(*key, std::chrono::steady_clock::now());
    if (!a.ok) {
        reply_error(req, w, {.http_status = 429, .message = a.reason, .type = "rate_limit_error", .code = "rate_limit_exceeded"},
                    key, {{"Retry-After", std::to_string(a.retry_after_s)}});
        return false;
    }
    lease = QuotaLease(*deps_.quotas, *key);
    return true;
}

// Pool thread. A request whose client left while it waited is dropped before any work on it.
void OpenAiService::preprocess(PendingGeneration& job) {
    if (job.writer->client_gone()) return reply_error(job.request, job.writer, client_closed_error(), job.key);
    try {
        preprocess_and_submit(job);
    } catch (const std::exception& e) {
        reply_error(job.request, job.writer,
                    {.http_status = 500, .message = std::string("internal error: ") + e.what(), .type = "server_error"},
                    job.key);
    } catch (...) {
        reply_error(job.request, job.writer, {.http_status = 500, .message = "internal error", .type = "server_error"},
                    job.key);
    }
}

// Pool thread: parses, validates, tokenizes and submits; errors are answered from here.
void OpenAiService::preprocess_and_submit(PendingGeneration& job) {
    const HttpRequest& req = job.request;
    const WriterPtr& w = job.writer;
    GenerationRequest g;
    if (auto e = parse_generation_request(job.endpoint, std::move(job.request.body), g)) return reply_error(req, w, *e, job.key);
    if (auto e = check_input(g)) return reply_error(req, w, *e, job.key);
    if (auto e = g.sampling.validate(); !e.ok()) return reply_error(req, w, bad_field("", e.message()), job.key);
    std::vector<int32_t> prompt;
    if (auto e = deps_.prompts->build(g, prompt)) return reply_error(req, w, *e, job.key);
    int max_tokens = 0;
    if (auto e = check_lengths(g, static_cast<int>(prompt.size()), max_tokens)) return reply_error(req, w, *e, job.key);
    ConstrainedDecoding::Compiled constrained;
    if (g.grammar) {
        if (!constrained_) return reply_error(req, w, bad_field(g.grammar->param, "constrained decoding is not available"), job.key);
        if (auto e = constrained_->compile(*g.grammar, constrained)) return reply_error(req, w, *e, job.key);
    }
    if (g.tools.active()) {
        if (auto e = compile_tools(g.tools, constrained)) return reply_error(req, w, *e, job.key);
    }
    // Tokenizing a large prompt takes a while: a client that left meanwhile costs the engine nothing.
    if (w->client_gone()) return reply_error(req, w, client_closed_error(), job.key);
    std::vector<engine::Request> children = make_engine_requests(job, g, std::move(prompt), max_tokens);
    for (engine::Request& child : children) {  // one compiled grammar; each child its own matcher
        child.grammar = constrained.grammar;
        child.grammar_vocab = constrained.vocab;
    }
    submit(job, std::move(children));
}

// Every tool's parameters must be a schema HiChat can enforce (a 400 naming tools[i].function.parameters
// otherwise); tool_choice "required" or a named function then compiles the format's call grammar,
// which the children decode under.
std::optional<ApiError> OpenAiService::compile_tools(const ToolRequest& tools, ConstrainedDecoding::Compiled& out) {
    if (!constrained_) return bad_field("tools", "constrained decoding is not available");
    for (size_t i = 0; i < tools.parameters.size(); ++i) {
        const GrammarSpec spec{.kind = grammar::GrammarKind::kJsonSchema, .text = tools.parameters[i].dump(),
                               .param = "tools[" + std::to_string(i) + "].function.parameters"};
        ConstrainedDecoding::Compiled unused;
        if (auto e = constrained_->compile(spec, unused)) return e;
    }
    if (tools.choice.mode != ToolChoiceMode::kRequired && tools.choice.mode != ToolChoiceMode::kNamed) return std::nullopt;
    const ToolCallGrammar calls = tool_call_grammar(deps_.prompts->tool_format(), tools);
    const GrammarSpec spec{.kind = grammar::GrammarKind::kJsonSchema, .text = calls.schema.dump(),
                           .strict = calls.strict, .param = "tool_choice", .frame = calls.frame};
    return constrained_->compile(spec, out);
}

// One engine request per choice (children), ids consecutive: the same prompt, cache salt, limits and
// deadline; seeds seed + i (mod 2^64) when a seed is given, else each child's own. One GenerationSink
// merges their events.
std::vector<engine::Request> OpenAiService::make_engine_requests(PendingGeneration& job, GenerationRequest& g,
                                                                 std::vector<int32_t> prompt, int max_tokens) {
    engine::Request r;
    r.id = {next_id_.fetch_add(static_cast<uint64_t>(g.n))};
    r.prompt = std::move(prompt);
    r.sampling = g.sampling;
    r.max_tokens = max_tokens;
    r.stop = std::move(g.stop);
    if (!g.ignore_eos) r.stop_token_ids = deps_.eos_token_ids;
    r.priority = g.priority;
    // Keys never share cached KV (a shared prefix's timing would leak it); with no keys all share.
    r.cache_salt = job.key ? job.key->value : "";
    r.owner = r.cache_salt;   // the fair share counts per key too
    r.num_logprobs = g.num_logprobs;
    if (g.echo && g.num_logprobs >= 0) r.num_prompt_logprobs = g.num_logprobs;
    r.arrival = job.arrival;  // time in the pool counts towards the deadline and the TTFT
    if (config_.request_timeout_s > 0) r.deadline = r.arrival + std::chrono::seconds(config_.request_timeout_s);
    const std::string id = request_id_text(job.endpoint, r.id.value);
    AccessRecord record{.ts = std::chrono::system_clock::now(), .request_id = id, .key_id = job.key,
                        .method = job.request.method, .path = job.request.target, .remote = job.request.remote};
    auto sink = std::make_shared<GenerationSink>(
        job.writer, ResponseIds{id, unix_seconds(), config_.served_model_name, job.endpoint}, g.stream, g.include_usage,
        SinkContext{deps_.metrics, deps_.quotas}, std::move(record), std::move(job.lease), g.n,
        g.num_logprobs >= 0 ? std::optional<LogprobsJson>(LogprobsJson(*deps_.tokenizer, g.num_logprobs)) : std::nullopt,
        g.tools.active() ? std::optional<ToolOutput>(ToolOutput{deps_.prompts->tool_format(), g.tools.names, g.tools.parallel})
                         : std::nullopt);
    if (g.echo) {
        sink->set_echo({.text = g.prompt_ids.empty() ? g.prompt : deps_.tokenizer->decode(g.prompt_ids),
                        .prompt_ids = r.prompt});
    }
    std::vector<engine::Request> children(static_cast<size_t>(g.n), r);
    for (int i = 0; i < g.n; ++i) {
        engine::Request& child = children[static_cast<size_t>(i)];
        child.id = {r.id.value + static_cast<uint64_t>(i)};
        if (r.sampling.seed) child.sampling.seed = *r.sampling.seed + static_cast<uint64_t>(i);
        child.sink = sink->choice_sink(i);
    }
    if (g.n > 1) sink->set_cancel_children(cancel_all(children));
    return children;
}

std::function<void()> OpenAiService::cancel_all(const std::vector<engine::Request>& children) const {
    std::vector<engine::RequestId> ids;
    for (const engine::Request& c : children) ids.push_back(c.id);
    engine::Engine* engine = deps_.engine;
    return [engine, ids = std::move(ids)] {
        for (engine::RequestId id : ids) engine->cancel(id);
    };
}

// Pool thread. The children go in together (all or none). The cancellation is wired after submit: a
// client that left before it is seen by on_client_gone(), which then cancels at once (Engine::cancel
// of an unknown id would be lost).
void OpenAiService::submit(PendingGeneration& job, std::vector<engine::Request> children) {
    std::function<void()> cancel = cancel_all(children);
    switch (deps_.engine->submit(std::move(children))) {
        case engine::Engine::Admission::kAccepted:
            job.writer->on_client_gone(std::move(cancel));
            return;
        case engine::Engine::Admission::kQueueFull:
            return reply_error(job.request, job.writer,
                               {.http_status = 429, .message = "the server is busy: request queue is full",
                                .type = "rate_limit_error", .code = "queue_full"},
                               job.key, {{"Retry-After", std::to_string(deps_.engine->retry_after_s())}});
        case engine::Engine::Admission::kOverloaded:
            return reply_error(job.request, job.writer, overloaded_error(*deps_.engine), job.key,
                               {{"Retry-After", std::to_string(deps_.engine->retry_after_s())}});
        case engine::Engine::Admission::kStopped:
            return reply_error(job.request, job.writer,
                               {.http_status = 503, .message = "the server is shutting down", .type = "server_error"},
                               job.key, {{"Retry-After", "5"}});
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
