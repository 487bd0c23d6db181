// BackgroundResponses: the background responses (POST /v1/responses with "background": true) from
// their first stored row to their last, and their cancellation.
//
// A background response is stored "queued" when it is created (add), "in_progress" at its first
// token (mark_started), and once more when it ends: completed or incomplete (finish, whose `persist`
// writes the full turn), failed (fail: a timeout, the server stopping, a store error) or cancelled
// (cancel). Its stored status only moves forward, it ends once, and `on_finished` is called once per
// ended response, after its final row is committed. A response that was queued or in progress when
// the server was killed is marked failed at the next start (fail_unfinished), and reported the same way.
// With `owe_webhooks` (webhooks configured), every final row is committed together with its event
// (background_event_type) as owed, for the webhook outbox to hand over (api/webhooks/webhook_outbox.h).
//
// Ownership: owned by ResponsesService; the store and whatever the callbacks reach must outlive it.
// Threads: every method from any thread except the engine thread (each may write the store). One
// mutex, held across each state's store write and the on_finished call, which must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "api/response_object.h"
#include "engine/request.h"
#include "session/session_store.h"

namespace hichat::api {

// Called with the response id and its final status (completed, incomplete, failed or cancelled).
using BackgroundHook = std::function<void(const std::string& response_id, std::string_view status)>;

// OpenAI's webhook event type of a background response's final status ("response.completed", ...);
// "" for a status that is not final.
std::string_view background_event_type(std::string_view status);

class BackgroundResponses {
public:
    // `cancel_request` stops a request in the engine (Engine::cancel); `on_finished` may be empty.
    BackgroundResponses(session::SessionStore& store, std::function<void(engine::RequestId)> cancel_request,
                        BackgroundHook on_finished, bool owe_webhooks = false);

    // Writes a response's final row: with `owed` set, SessionStore::put_response must commit it with
    // the row (in one transaction).
    using PersistFinal = std::function<std::optional<ApiError>(const std::optional<session::OwedWebhook>& owed)>;

    // Stores `row` as `state` says (status "queued") and follows the response until it ends.
    // Errors: the store's (nothing is followed then).
    Status add(session::StoredResponse row, ResponseState state, engine::RequestId request_id);
    // The engine refused it: its row is deleted and nothing is reported.
    void drop(const std::string& id);
    // queued -> in_progress; nothing once it ended.
    void mark_started(const std::string& id);
    // The generation ended normally with `status` (completed or incomplete): `persist` writes the
    // final row and the end is reported. Nothing is written when the response already ended
    // (cancelled): nullopt. An error from `persist` is returned and the response stays unended, for
    // fail() to end it.
    std::optional<ApiError> finish(const std::string& id, std::string_view status, const PersistFinal& persist);
    // Stored as failed with `e`'s code and message, then reported; nothing once it ended.
    void fail(const std::string& id, const ApiError& e);
    // A response still queued or in progress here: stored as cancelled, its engine request cancelled,
    // reported; returns the response object as stored. nullopt: it is not running here (it ended).
    std::optional<std::string> cancel(const std::string& id);
    // At start, before any request: every background response the store holds as queued or in
    // progress (the last server stopped before it ended) is stored as failed (code "server_error")
    // and reported. Returns how many, or the store's error.
    Result<int> fail_unfinished();

    size_t num_running() const;

private:
    struct Run {
        session::StoredResponse row;   // as stored at add(); response_json is rewritten per state
        ResponseState state;
        engine::RequestId request_id;
    };
    using Runs = std::map<std::string, Run>;

    // The row with state's response object (and, for a final state, `owed`).
    Status write_locked(Run& run, const std::optional<session::OwedWebhook>& owed = std::nullopt);
    // The event a final `status` owes; nullopt without webhooks.
    std::optional<session::OwedWebhook> owed_event(const std::string& id, std::string_view status) const;
    void end_locked(Runs::iterator it, std::string_view status);     // erase, report

    session::SessionStore& store_;
    std::function<void(engine::RequestId)> cancel_request_;
    BackgroundHook on_finished_;
    const bool owe_webhooks_;
    mutable std::mutex mu_;
    Runs runs_;  // guarded by mu_; the responses not yet ended, by id
};

}  // namespace hichat::api
