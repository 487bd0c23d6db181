// OpenAiService: the OpenAI-compatible endpoints on top of the engine. Translates HTTP + JSON into
// engine::Request and engine events into responses; nothing below it sees HTTP or JSON.
// Handlers run on I/O threads and never block: a generation request is admitted there (API key,
// quota) and handed to the PreprocessPool, whose worker parses it, tokenizes it and submits it to the
// engine; the answer comes from the engine thread through a GenerationSink (or from the worker, for
// errors). The service, and everything its deps point to, must outlive the HTTP server and the
// pool's stop().
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "api/policy/api_key_store.h"
#include "api/policy/deny_list.h"
#include "api/telemetry/metrics.h"
#include "api/policy/quota_lease.h"
#include "api/policy/quota_limiter.h"
#include "api/http/router.h"
#include "api/openai_request.h"
#include "api/serial_worker.h"
#include "api/batch_runner.h"
#include "api/batches_service.h"
#include "api/conversations_service.h"
#include "api/files_service.h"
#include "api/preprocess_pool.h"
#include "api/prompt_builder.h"
#include "api/responses_service.h"
#include "engine/engine.h"
#include "session/batch_store.h"
#include "session/file_folder.h"
#include "session/session_store.h"

namespace hichat::api {

// The Files and Batch APIs (/v1/files, /v1/batches).
struct BatchDeps {
    session::BatchStore* store = nullptr;        // null: /v1/files and /v1/batches answer 503
    const session::FileFolder* folder = nullptr;  // the files' bytes; required with `store`
    int64_t max_file_bytes = int64_t{100} << 20;  // larger uploads: 413
    BatchRunnerConfig runner;                     // lines in flight; the "batch finished" hook
};

struct ServiceDeps {
    engine::Engine* engine = nullptr;
    PreprocessPool* preprocess = nullptr;  // required: where generation requests are tokenized
    const tokenizer::Tokenizer* tokenizer = nullptr;
    const PromptBuilder* prompts = nullptr;
    const ApiKeyStore* keys = nullptr;     // empty store: no authentication
    QuotaLimiter* quotas = nullptr;        // null: no per-key limits
    Metrics* metrics = nullptr;            // null: no /metrics
    const DenyList* input_filter = nullptr;  // null or empty: no input filter
    std::vector<int32_t> eos_token_ids;    // end generation unless ignore_eos
    session::SessionStore* sessions = nullptr;  // null: the Responses and Conversations APIs answer 503
    SerialWorker* session_writer = nullptr;  // finished turns are stored here; null: on the engine thread
    std::string model_fingerprint;         // stored token ids are reused only under the same one
    BatchDeps batches;                     // the runner starts in attach() when `batches.store` is set
    // A background response ended (completed, incomplete, failed or cancelled; those a stopped server
    // left unfinished are failed in attach()). Any thread but the engine's; must not block. May be empty.
    BackgroundHook on_background_response_finished;
    // Webhooks on: a background response's final row commits its event as owed, for the webhook
    // outbox to hand over (batches: batches.runner.owe_webhooks).
    bool owe_webhooks = false;
};

struct ServiceConfig {
    std::string served_model_name;
    int request_timeout_s = 0;             // per-request deadline; 0: none
};

class OpenAiService {
public:
    // The routes may be served before the model is loaded: until attach(), /health answers 503
    // and every other endpoint 503 as well.
    explicit OpenAiService(ServiceConfig config);

    void add_routes(Router& router);
    // Once the engine and friends exist; then the service is ready. Call once.
    void attach(ServiceDeps deps);
    // Stops the batch runner (its lines in flight are cancelled and run again after a restart). Call
    // before the preprocessing pool and the engine stop; idempotent.
    void stop_batches();

private:
    using WriterPtr = std::shared_ptr<ResponseWriter>;

    void handle_health(const HttpRequest& req, const WriterPtr& w);
    void handle_models(const HttpRequest& req, const WriterPtr& w);
    void handle_model(const HttpRequest& req, const WriterPtr& w);  // GET /v1/models/{id}
    void handle_metrics(const HttpRequest& req, const WriterPtr& w);
    void handle_generation(Endpoint endpoint, HttpRequest& req, const WriterPtr& w);  // takes req's body
    // /v1/responses and /v1/conversations: admission here (I/O thread), the rest on a pool worker.
    void handle_session(HttpRequest& req, const WriterPtr& w);
    void route_session(SessionJob& job);  // pool thread
    // /v1/files and /v1/batches: admission here (I/O thread), the rest on a pool worker.
    void handle_batch_api(HttpRequest& req, const WriterPtr& w);
    // Posts a store request (admitted: key, quota) to the pool, where `route` answers it.
    void post_store_job(HttpRequest& req, const WriterPtr& w, std::optional<KeyId> key, QuotaLease lease,
                        std::function<void(SessionJob&)> route);
    // The BatchRunner's submitter: one batch line through the generation path, on the calling thread.
    void run_batch_line(Endpoint endpoint, std::string body, const std::string& owner, WriterPtr writer);

    // A generation request between its admission (I/O thread) and Engine::submit (pool thread).
    struct PendingGeneration;
    void preprocess(PendingGeneration& job);
    void preprocess_and_submit(PendingGeneration& job);
    std::vector<engine::Request> make_engine_requests(PendingGeneration& job, GenerationRequest& g,
                                                      std::vector<int32_t> prompt, int max_tokens);
    // Cancels every one of `children` (by id) when called; any thread.
    std::function<void()> cancel_all(const std::vector<engine::Request>& children) const;
    std::optional<ApiError> compile_tools(const ToolRequest& tools, ConstrainedDecoding::Compiled& out);
    void submit(PendingGeneration& job, std::vector<engine::Request> children);
    bool admit_quota(const HttpRequest& req, const WriterPtr& w, const std::optional<KeyId>& key, QuotaLease& lease);

    // Sends 401 and returns false when keys are configured and the request has none that matches.
    bool authenticate(const HttpRequest& req, const WriterPtr& w, std::optional<KeyId>& key);
    std::optional<ApiError> check_input(const GenerationRequest& g) const;
    std::optional<ApiError> check_lengths(const GenerationRequest& g, int num_prompt_tokens, int& max_tokens) const;
    void reply_error(const HttpRequest& req, const WriterPtr& w, const ApiError& e, std::optional<KeyId> key,
                     HeaderList extra = {});
    std::string request_id_text(Endpoint endpoint, uint64_t n) const;
    std::string model_object_json() const;

    bool ready() const { return ready_.load(std::memory_order_acquire); }

    ServiceConfig config_;
    ServiceDeps deps_;                 // written once by attach(), before ready_ turns true
    std::atomic<bool> ready_{false};
    std::atomic<uint64_t> next_id_{1};
    std::unique_ptr<ResponsesService> responses_;          // set by attach() when sessions are on
    std::unique_ptr<ConversationsService> conversations_;
    std::unique_ptr<ConstrainedDecoding> constrained_;     // set by attach()
    std::unique_ptr<BatchRunner> batch_runner_;            // set by attach() when the batch store is on
    std::unique_ptr<FilesService> files_;
    std::unique_ptr<BatchesService> batches_;
    uint64_t id_salt_;
};

}  // namespace hichat::api
