#include "api/engine_admission.h"
#include "api/responses_service.h"

#include <algorithm>
#include <chrono>

#include "api/responses_sink.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Json messages_json(const std::vector<tokenizer::ChatMessage>& messages) {
    Json out = Json::array();
    for (const auto& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
    return out;
}

std::vector<tokenizer::ChatMessage> messages_from_json(const Json& j) {
    std::vector<tokenizer::ChatMessage> out;
    if (!j.is_array()) return out;
    for (const Json& m : j) out.push_back({m.value("role", ""), m.value("content", "")});
    return out;
}

Json optional_string(const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); }
std::optional<std::string> optional_string(const Json& j) {
    return j.is_string() ? std::optional<std::string>(j.get<std::string>()) : std::nullopt;
}

// The input items of a turn as stored and listed (each gets an id).
Json input_items_json(const std::vector<InputMessage>& input, std::vector<std::string>& ids) {
    Json items = Json::array();
    for (const InputMessage& m : input) {
        ids.push_back(new_object_id("msg"));
        items.push_back(message_item_json(ids.back(), m));
    }
    return items;
}

Json list_json(const std::vector<Json>& data, bool has_more) {
    Json list = {{"object", "list"}, {"data", data}};
    list["first_id"] = data.empty() ? Json(nullptr) : data.front()["id"];
    list["last_id"] = data.empty() ? Json(nullptr) : data.back()["id"];
    list["has_more"] = has_more;
    return list;
}

}  // namespace

struct ResponsesService::Turn {
    ResponsesRequest request;
    std::string owner;
    TurnHistory history;
    TurnPrompt prompt;
    Json input_items;                         // this turn's items, with ids
    std::vector<std::string> input_item_ids;
    std::string conversation_start_item;      // conversation: the item its token ids start at ("" : none)
    int num_conversation_tokens = -1;         // conversation: the reused ids' count (-1: not reused)
};

ResponsesService::ResponsesService(SessionDeps deps)
    : deps_(std::move(deps)),
      background_(*deps_.store, [engine = deps_.engine](engine::RequestId id) { engine->cancel(id); },
                  deps_.on_background_finished, deps_.owe_webhooks) {}

std::optional<ApiError> ResponsesService::check_request(const ResponsesRequest& r) const {
    if (!r.model.empty() && r.model != deps_.served_model_name) {
        return ApiError{.http_status = 404,
                        .message = "model '" + r.model + "' does not exist; this server serves '" +
                                   deps_.served_model_name + "'",
                        .param = "model",
                        .code = "model_not_found"};
    }
    if (deps_.input_filter == nullptr || deps_.input_filter->empty()) return std::nullopt;
    for (size_t i = 0; i < r.input.size(); ++i) {
        if (deps_.input_filter->find(r.input[i].text)) {
            return bad_field("input[" + std::to_string(i) + "].content", "content contains a blocked phrase");
        }
    }
    if (r.instructions && deps_.input_filter->find(*r.instructions)) {
        return bad_field("instructions", "instructions contain a blocked phrase");
    }
    return std::nullopt;
}

std::optional<ApiError> ResponsesService::history_from_response(const SessionJob& job, const std::string& id, Turn& turn) {
    auto stored = deps_.store->get_response(job.owner(), id);
    if (!stored.ok()) return store_error(stored.status().message());
    if (!stored->has_value()) {
        return not_found_error("previous_response_id", "previous_response_id: no response " + id + " is stored");
    }
    const session::StoredResponse& r = **stored;
    const Json object = Json::parse(r.response_json, nullptr, false);
    const std::string status = object.is_object() ? object.value("status", "") : "";
    if (status == "queued" || status == "in_progress") {
        return bad_field("previous_response_id", "previous_response_id: response " + id + " is still " + status +
                                                     "; continue it once it has completed");
    }
    const Json context = Json::parse(r.context_json, nullptr, false);
    turn.history.messages = messages_from_json(context.is_object() ? context.value("messages", Json()) : Json());
    turn.history.instructions = context.is_object() ? optional_string(context.value("instructions", Json())) : std::nullopt;
    std::vector<int32_t> ids = r.prompt_ids;
    ids.insert(ids.end(), r.output_ids.begin(), r.output_ids.end());
    turn.history.token_ids = std::move(ids);
    turn.history.model_fingerprint = r.model_fingerprint;
    return std::nullopt;
}

// The conversation's items as history. Its token ids are reusable when every item from the one its
// context names onwards has ids, under this model (items added by items.create have none).
std::optional<ApiError> ResponsesService::history_from_conversation(const SessionJob& job, const std::string& id,
                                                                    Turn& turn) {
    auto conv = deps_.store->get_conversation(job.owner(), id);
    if (!conv.ok()) return store_error(conv.status().message());
    if (!conv->has_value()) return not_found_error("conversation", "conversation: no conversation " + id + " exists");
    auto items = deps_.store->all_items(job.owner(), id);
    if (!items.ok()) return store_error(items.status().message());
    if (!items->has_value()) return not_found_error("conversation", "conversation: no conversation " + id + " exists");
    const Json context = Json::parse((*conv)->context_json.empty() ? "{}" : (*conv)->context_json, nullptr, false);
    const std::string start = context.is_object() ? context.value("token_start_item", "") : "";
    std::optional<std::vector<int32_t>> ids;
    for (const session::ConversationItem& item : **items) {
        auto m = message_from_item_json(Json::parse(item.item_json, nullptr, false));
        if (m) turn.history.messages.push_back(to_chat_message(*m));
        if (item.item_id == start) ids.emplace();
        if (!ids) continue;
        if (!m || !item.token_ids) {
            ids.reset();
            break;
        }
        ids->insert(ids->end(), item.token_ids->begin(), item.token_ids->end());
    }
    if (!start.empty() && ids) {
        turn.history.token_ids = std::move(ids);
        turn.history.instructions = optional_string(context.value("instructions", Json()));
        turn.history.model_fingerprint = context.value("fingerprint", "");
        turn.conversation_start_item = start;
    }
    return std::nullopt;
}

std::optional<ApiError> ResponsesService::load_history(const SessionJob& job, const ResponsesRequest& r, Turn& turn) {
    if (!r.previous_response_id.empty()) return history_from_response(job, r.previous_response_id, turn);
    if (!r.conversation_id.empty()) return history_from_conversation(job, r.conversation_id, turn);
    return std::nullopt;
}

// Pool thread: parse, load the history, build the prompt, submit.
void ResponsesService::create(SessionJob& job) {
    auto turn = std::make_shared<Turn>();
    turn->owner = job.owner();
    ResponsesRequest& r = turn->request;
    if (auto e = parse_responses_request(std::move(job.request.body), r)) return job.reply_error(*e);
    if (auto e = check_request(r)) return job.reply_error(*e);
    if (auto e = load_history(job, r, *turn)) return job.reply_error(*e);
    TurnInput input{.instructions = r.instructions, .model_fingerprint = deps_.model_fingerprint,
                    .max_context_tokens = deps_.engine->max_context_tokens(),
                    .max_output_tokens = r.max_output_tokens, .truncation_auto = r.truncation_auto};
    for (const InputMessage& m : r.input) input.messages.push_back(to_chat_message(m));
    if (auto e = build_turn_prompt(*deps_.prompts, turn->history, input, turn->prompt)) return job.reply_error(*e);
    if (turn->prompt.num_tokens_reused > 0 && !turn->conversation_start_item.empty()) {
        turn->num_conversation_tokens = turn->prompt.num_tokens_reused;
    }
    turn->input_items = input_items_json(r.input, turn->input_item_ids);
    if (job.writer->client_gone()) return;  // nothing to answer; the exchange records 499
    submit(job, std::move(turn));
}

ResponseState ResponsesService::new_state(const Turn& turn) const {
    const ResponsesRequest& r = turn.request;
    return ResponseState{.id = new_object_id("resp"), .created_at = unix_seconds(), .model = deps_.served_model_name,
                         .output_item_id = new_object_id("msg"), .previous_response_id = r.previous_response_id,
                         .instructions = r.instructions, .store = r.store, .background = r.background,
                         .metadata = r.metadata, .temperature = r.sampling.temperature, .top_p = r.sampling.top_p,
                         .max_output_tokens = r.max_output_tokens, .truncation_auto = r.truncation_auto,
                         .user = r.user, .conversation_id = r.conversation_id};
}

engine::Request ResponsesService::engine_request(const SessionJob& job, const Turn& turn) const {
    const ResponsesRequest& r = turn.request;
    engine::Request er;
    er.id = deps_.next_request_id();
    const int room = deps_.engine->max_context_tokens() - static_cast<int>(turn.prompt.ids.size());
    er.max_tokens = r.max_output_tokens.value_or(room);
    er.prompt = turn.prompt.ids;
    er.sampling = r.sampling;
    er.stop_token_ids = deps_.eos_token_ids;
    er.arrival = job.arrival;
    er.cache_salt = job.owner();
    er.owner = job.owner();
    if (deps_.request_timeout_s > 0) er.deadline = er.arrival + std::chrono::seconds(deps_.request_timeout_s);
    return er;
}

void ResponsesService::submit(SessionJob& job, std::shared_ptr<Turn> turn) {
    if (turn->request.background) return submit_background(job, std::move(turn));
    engine::Request er = engine_request(job, *turn);
    ResponseState state = new_state(*turn);
    AccessRecord record{.ts = std::chrono::system_clock::now(), .request_id = state.id, .key_id = job.key,
                        .method = job.request.method, .path = job.request.target, .remote = job.request.remote};
    PersistTurn persist = [this, turn](const ResponseState& s, const std::vector<int32_t>& out) {
        return this->persist(*turn, s, out);
    };
    er.sink = std::make_shared<ResponsesSink>(job.writer, std::move(state), turn->request.stream, std::move(persist),
                                              ResponsesSinkContext{deps_.metrics, deps_.quotas, deps_.session_writer}, std::move(record),
                                              std::move(job.lease));
    const engine::RequestId request_id = er.id;
    engine::Engine* engine = deps_.engine;
    const engine::Engine::Admission admission = engine->submit(std::move(er));
    if (admission != engine::Engine::Admission::kAccepted) return reply_refused(job, admission);
    job.writer->on_client_gone([engine, request_id] { engine->cancel(request_id); });
}

// Stored "queued" and answered at once; the generation answers nobody: its sink writes to a writer
// with no connection, and its progress and end go to the store through background_ (on the session
// writer, never the engine thread). The client leaving does not cancel it; POST .../cancel does.
void ResponsesService::submit_background(SessionJob& job, std::shared_ptr<Turn> turn) {
    engine::Request er = engine_request(job, *turn);
    ResponseState state = new_state(*turn);
    state.status = "queued";
    const std::string id = state.id;
    const std::string queued = response_json(state).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    if (Status s = background_.add(stored_row(*turn, state, {}), state, er.id); !s.ok()) {
        return job.reply_error(store_error(s.message()));
    }
    BackgroundResponses* background = &background_;
    SerialWorker* worker = deps_.session_writer;
    auto on_worker = [worker](std::function<void()> task) {
        if (worker != nullptr) return worker->post(std::move(task));
        task();
    };
    ResponsesSinkContext context{deps_.metrics, deps_.quotas, deps_.session_writer};
    context.on_first_event = [on_worker, background, id] { on_worker([background, id] { background->mark_started(id); }); };
    context.on_failed = [on_worker, background, id](const ApiError& e) {
        on_worker([background, id, e] { background->fail(id, e); });
    };
    PersistTurn persist = [this, turn](const ResponseState& s, const std::vector<int32_t>& out) {
        return background_.finish(s.id, s.status, [&](const std::optional<session::OwedWebhook>& owed) {
            return this->persist(*turn, s, out, owed);
        });
    };
    AccessRecord record{.ts = std::chrono::system_clock::now(), .request_id = id, .key_id = job.key,
                        .method = job.request.method, .path = job.request.target, .remote = "background"};
    auto detached = std::make_shared<ResponseWriter>(std::weak_ptr<ResponseSink>());
    er.sink = std::make_shared<ResponsesSink>(detached, std::move(state), false, std::move(persist), std::move(context),
                                              std::move(record), std::move(job.lease));
    const engine::Engine::Admission admission = deps_.engine->submit(std::move(er));
    if (admission != engine::Engine::Admission::kAccepted) {
        background_.drop(id);
        return reply_refused(job, admission);
    }
    if (job.key) job.writer->annotate(AccessRecord{.key_id = job.key});
    job.writer->send(200, "application/json", queued, {{"X-Request-Id", id}});
}

void ResponsesService::reply_refused(SessionJob& job, engine::Engine::Admission admission) {
    engine::Engine* engine = deps_.engine;
    switch (admission) {
        case engine::Engine::Admission::kAccepted:
            return;
        case engine::Engine::Admission::kQueueFull:
            return job.reply_error({.http_status = 429, .message = "the server is busy: request queue is full",
                                    .type = "rate_limit_error", .code = "queue_full"});
        case engine::Engine::Admission::kOverloaded:
            return job.reply_error(overloaded_error(*engine), {{"Retry-After", std::to_string(engine->retry_after_s())}});
        case engine::Engine::Admission::kStopped:
            return job.reply_error({.http_status = 503, .message = "the server is shutting down", .type = "server_error"});
    }
}

session::StoredResponse ResponsesService::stored_row(const Turn& turn, const ResponseState& state,
                                                     const std::vector<int32_t>& output_ids) const {
    std::vector<tokenizer::ChatMessage> messages = turn.prompt.messages;
    if (state.output_done) messages.push_back({"assistant", state.text});
    const Json context = {{"messages", messages_json(messages)}, {"instructions", optional_string(state.instructions)}};
    return session::StoredResponse{
        .id = state.id, .owner = turn.owner, .created_at = state.created_at, .model = state.model,
        .response_json = response_json(state).dump(-1, ' ', false, Json::error_handler_t::replace),
        .input_items_json = turn.input_items.dump(-1, ' ', false, Json::error_handler_t::replace),
        .context_json = context.dump(-1, ' ', false, Json::error_handler_t::replace),
        .prompt_ids = turn.prompt.ids, .output_ids = output_ids,
        .previous_response_id = state.previous_response_id, .conversation_id = state.conversation_id,
        .model_fingerprint = deps_.model_fingerprint};
}

// Engine thread, before the client sees the end: the response (store: true) and the conversation's new items.
std::optional<ApiError> ResponsesService::persist(const Turn& turn, const ResponseState& state,
                                                  const std::vector<int32_t>& output_ids,
                                                  const std::optional<session::OwedWebhook>& owed) {
    if (!turn.request.conversation_id.empty()) {
        if (auto e = append_to_conversation(turn, state, output_ids)) return e;
    }
    if (!turn.request.store) return std::nullopt;
    if (Status s = deps_.store->put_response(stored_row(turn, state, output_ids), owed); !s.ok()) {
        return store_error(s.message());
    }
    return std::nullopt;
}

// The turn's input items and its output message go to the end of the conversation. The first input
// item carries the prompt ids beyond the reused ones (all of them after a full render, which then
// becomes where the conversation's ids start); the output item carries the output ids.
std::optional<ApiError> ResponsesService::append_to_conversation(const Turn& turn, const ResponseState& state,
                                                                 const std::vector<int32_t>& output_ids) {
    const bool reused = turn.num_conversation_tokens >= 0;
    const size_t first_new = reused ? static_cast<size_t>(turn.num_conversation_tokens) : 0;
    std::vector<session::ConversationItem> items;
    for (size_t i = 0; i < turn.input_item_ids.size(); ++i) {
        session::ConversationItem item{.item_id = turn.input_item_ids[i],
                                       .item_json = turn.input_items[i].dump(-1, ' ', false, Json::error_handler_t::replace)};
        item.token_ids = i == 0 ? std::vector<int32_t>(turn.prompt.ids.begin() + static_cast<std::ptrdiff_t>(first_new),
                                                       turn.prompt.ids.end())
                                : std::vector<int32_t>();
        items.push_back(std::move(item));
    }
    items.push_back({.item_id = state.output_item_id,
                     .item_json = output_item_json(state).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                     .token_ids = output_ids});
    auto appended = deps_.store->append_items(turn.owner, turn.request.conversation_id, std::move(items));
    if (!appended.ok()) return store_error(appended.status().message());
    if (!*appended) return not_found_error("conversation", "conversation " + turn.request.conversation_id + " was deleted");
    const Json context = {{"token_start_item", reused ? turn.conversation_start_item : turn.input_item_ids.front()},
                          {"instructions", optional_string(state.instructions)},
                          {"fingerprint", deps_.model_fingerprint}};
    auto updated = deps_.store->update_conversation(turn.owner, turn.request.conversation_id, std::nullopt, context.dump());
    if (!updated.ok()) return store_error(updated.status().message());
    return std::nullopt;
}

std::optional<session::StoredResponse> ResponsesService::find(SessionJob& job, const std::string& id) {
    if (!is_valid_object_id(id, "resp")) {
        job.reply_error(bad_field("response_id", "response_id must be a response id (resp_...), got \"" + id + "\""));
        return std::nullopt;
    }
    auto stored = deps_.store->get_response(job.owner(), id);
    if (!stored.ok()) {
        job.reply_error(store_error(stored.status().message()));
        return std::nullopt;
    }
    if (!stored->has_value()) job.reply_error(not_found_error("response_id", "no response " + id + " is stored"));
    return std::move(stored).value();
}

void ResponsesService::retrieve(SessionJob& job, const std::string& id) {
    auto stored = find(job, id);
    if (!stored) return;
    job.writer->send(200, "application/json", stored->response_json);
}

void ResponsesService::remove(SessionJob& job, const std::string& id) {
    if (!is_valid_object_id(id, "resp")) {
        return job.reply_error(bad_field("response_id", "response_id must be a response id (resp_...)"));
    }
    auto deleted = deps_.store->delete_response(job.owner(), id);
    if (!deleted.ok()) return job.reply_error(store_error(deleted.status().message()));
    if (!*deleted) return job.reply_error(not_found_error("response_id", "no response " + id + " is stored"));
    job.reply(200, {{"id", id}, {"object", "response"}, {"deleted", true}});
}

// OpenAI's cancel: a queued or running background response becomes cancelled; one that already
// ended is returned as it is (cancel is idempotent); a response created without background: 400.
void ResponsesService::cancel(SessionJob& job, const std::string& id) {
    auto stored = find(job, id);
    if (!stored) return;
    const Json object = Json::parse(stored->response_json, nullptr, false);
    if (!object.is_object() || object.value("background", false) != true) {
        return job.reply_error(bad_field("response_id", "only a background response (created with background: true) "
                                                        "can be cancelled; " + id + " is not one"));
    }
    std::optional<std::string> cancelled = background_.cancel(id);
    if (!cancelled) {  // it ended: as stored now
        stored = find(job, id);
        if (!stored) return;
        cancelled = std::move(stored->response_json);
    }
    if (job.key) job.writer->annotate(AccessRecord{.key_id = job.key});
    job.writer->send(200, "application/json", std::move(*cancelled));
}

void ResponsesService::list_input_items(SessionJob& job, const std::string& id) {
    ListQuery q;
    if (auto e = parse_list_query(job.request.query, q)) return job.reply_error(*e);
    auto stored = find(job, id);
    if (!stored) return;
    Json items = Json::parse(stored->input_items_json, nullptr, false);
    std::vector<Json> all = items.is_array() ? items.get<std::vector<Json>>() : std::vector<Json>();
    if (!q.ascending) std::reverse(all.begin(), all.end());
    size_t begin = 0;
    if (!q.after.empty()) {
        auto it = std::find_if(all.begin(), all.end(), [&](const Json& j) { return j.value("id", "") == q.after; });
        if (it == all.end()) return job.reply_error(bad_field("after", "after: no input item " + q.after + " in " + id));
        begin = static_cast<size_t>(it - all.begin()) + 1;
    }
    const size_t end = std::min(all.size(), begin + static_cast<size_t>(q.limit));
    job.reply(200, list_json(std::vector<Json>(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                               all.begin() + static_cast<std::ptrdiff_t>(end)),
                             end < all.size()));
}

}  // namespace hichat::api
