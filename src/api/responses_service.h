// ResponsesService: POST /v1/responses (a turn, maybe continuing a stored response or a conversation),
// GET / DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items, POST /v1/responses/{id}/cancel.
// Its methods run on a preprocessing worker (never an I/O thread: they read and write the SessionStore
// and tokenize); a generated response is answered from the engine thread by its ResponsesSink. A
// background one (background: true) is answered at once, "queued", and BackgroundResponses stores
// its progress and end.
// Owned by OpenAiService; whatever SessionDeps points to outlives it.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "api/background_responses.h"
#include "api/policy/deny_list.h"
#include "api/policy/quota_limiter.h"
#include "api/prompt_builder.h"
#include "api/responses_request.h"
#include "api/response_object.h"
#include "api/session_job.h"
#include "api/telemetry/metrics.h"
#include "api/serial_worker.h"
#include "api/turn_prompt.h"
#include "engine/engine.h"
#include "session/session_store.h"

namespace hichat::api {

struct SessionDeps {
    engine::Engine* engine = nullptr;
    const PromptBuilder* prompts = nullptr;
    session::SessionStore* store = nullptr;
    Metrics* metrics = nullptr;               // may be null
    QuotaLimiter* quotas = nullptr;           // may be null
    SerialWorker* session_writer = nullptr;   // where finished turns are stored; null: engine thread
    const DenyList* input_filter = nullptr;   // may be null
    std::vector<int32_t> eos_token_ids;
    std::string served_model_name;
    std::string model_fingerprint;            // stored token ids are reused only under the same one
    int request_timeout_s = 0;
    std::function<engine::RequestId()> next_request_id;
    BackgroundHook on_background_finished;    // a background response ended (any thread); may be empty
    bool owe_webhooks = false;                // webhooks on: final rows commit their event as owed
};

class ResponsesService {
public:
    explicit ResponsesService(SessionDeps deps);

    void create(SessionJob& job);
    void retrieve(SessionJob& job, const std::string& id);
    void remove(SessionJob& job, const std::string& id);
    void list_input_items(SessionJob& job, const std::string& id);
    void cancel(SessionJob& job, const std::string& id);
    // At start, before any request: background responses a stopped server left queued or in
    // progress are stored as failed and reported. Returns how many.
    Result<int> fail_unfinished_background() { return background_.fail_unfinished(); }

private:
    struct Turn;  // one turn being built
    std::optional<ApiError> check_request(const ResponsesRequest& r) const;
    std::optional<ApiError> load_history(const SessionJob& job, const ResponsesRequest& r, Turn& turn);
    std::optional<ApiError> history_from_response(const SessionJob& job, const std::string& id, Turn& turn);
    std::optional<ApiError> history_from_conversation(const SessionJob& job, const std::string& id, Turn& turn);
    // `owed`: a background response's webhook event, committed with its final row.
    std::optional<ApiError> persist(const Turn& turn, const ResponseState& state, const std::vector<int32_t>& output_ids,
                                    const std::optional<session::OwedWebhook>& owed = std::nullopt);
    std::optional<ApiError> append_to_conversation(const Turn& turn, const ResponseState& state,
                                                   const std::vector<int32_t>& output_ids);
    ResponseState new_state(const Turn& turn) const;
    engine::Request engine_request(const SessionJob& job, const Turn& turn) const;
    session::StoredResponse stored_row(const Turn& turn, const ResponseState& state,
                                       const std::vector<int32_t>& output_ids) const;
    void submit(SessionJob& job, std::shared_ptr<Turn> turn);
    void submit_background(SessionJob& job, std::shared_ptr<Turn> turn);
    // Answers the engine's refusal (queue full, overloaded, stopping).
    void reply_refused(SessionJob& job, engine::Engine::Admission admission);
    std::optional<session::StoredResponse> find(SessionJob& job, const std::string& id);

    SessionDeps deps_;
    BackgroundResponses background_;
};

}  // namespace hichat::api
